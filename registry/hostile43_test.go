package registry

import (
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/registry/registrytest"
)

// TestHostileDigestIsNotPrinted: a registry that takes the credentials and answers the
// manifest request with a digest of its choice — sha256: and the hex of the password, of the
// refresh token it issued (never sent back), or the password's hex in upper case (no OCI
// digest) — gets, over two passes, with the credentials of a pull Secret and of a Docker
// config file, no digest printed: the well-formed ones are Found with no digest (they hold a
// secret's hex), the malformed one is not verified and said to be malformed in driverguard's
// words. No result holds any form of the password, of user:password or of the tokens, hex
// included.
func TestHostileDigestIsNotPrinted(t *testing.T) {
	for _, how := range registrytest.DigestMisbehaviours {
		for _, source := range []string{"Secret", "Docker config"} {
			t.Run(string(how)+"/"+source, func(t *testing.T) {
				t.Parallel()
				h := registrytest.NewHostile(t, hostileUser, hostilePass, how)
				img := h.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
				src := SecretSource(pullSecret("drivercred", h.Host, hostileUser, hostilePass, false))
				if source == "Docker config" {
					src = FileSource(sourceDockerConfig, configFile(t, h.Host, hostileUser, hostilePass))
				}
				c := NewChecker(Options{Timeout: 5 * time.Second})
				for pass := 1; pass <= 2; pass++ {
					got := c.Check(t.Context(), []string{img}, Fixed(Keyring{src}))
					r := got[img]
					if how == registrytest.DigestNotOCI {
						require.Equal(t, Warning, r.Status, "pass %d: %s", pass, r.Message)
						assert.Equal(t, ReasonOther, r.Reason)
						assert.Contains(t, r.Message, "the manifest request to "+h.Host+" was answered with a Docker-Content-Digest that is not an OCI digest", "pass %d", pass)
					} else {
						require.Equal(t, Found, r.Status, "pass %d: %v", pass, r.Err)
					}
					assert.Empty(t, r.Digest, "pass %d: the registry's digest holds a secret's hex: not printed", pass)
					assert.Equal(t, []string{src.Name}, r.Credentials)
					leaks(t, got, append(hostileNever(h), "[redacted]")...)
				}
				assert.NotEmpty(t, h.Seen(), "the registry was sent the credentials")
			})
		}
	}
}

// TestDigestOfAnHonestRegistryIsPrinted: the digest of a registry that answers the truth, asked
// with credentials, is printed.
func TestDigestOfAnHonestRegistryIsPrinted(t *testing.T) {
	t.Parallel()
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	img := reg.Push(t, "rebellions/atom/rbln-driver:1.0")
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img},
		Fixed(Keyring{SecretSource(pullSecret("drivercred", reg.Host, "robot", "s3cret-pa55", false))}))
	require.Equal(t, Found, got[img].Status, "%v", got[img].Err)
	assert.True(t, OCIDigest(got[img].Digest), got[img].Digest)
}

// TestOCIDigest: sha256: and 64 lower-case hex digits, or sha512: and 128; nothing else.
func TestOCIDigest(t *testing.T) {
	t.Parallel()
	h64, h128 := strings.Repeat("0123456789abcdef", 4), strings.Repeat("0123456789abcdef", 8)
	for d, want := range map[string]bool{
		"sha256:" + h64:                      true,
		"sha512:" + h128:                     true,
		"sha256:" + strings.ToUpper(h64):     false,
		"SHA256:" + h64:                      false,
		"sha256:" + h64[:63]:                 false,
		"sha256:" + h64 + "0":                false,
		"sha256:" + h128:                     false,
		"sha512:" + h64:                      false,
		"sha384:" + h64 + h64[:32]:           false,
		"md5:" + h64[:32]:                    false,
		"sha256:" + h64[:62] + "g0":          false,
		"sha256:" + h64 + "\n":               false,
		" sha256:" + h64:                     false,
		"sha256:" + h64[:32] + "s3cr3t" + "": false,
		h64:                                  false,
		"":                                   false,
	} {
		assert.Equal(t, want, OCIDigest(d), "%q", d)
	}
}

// TestPassDigest: a well-formed digest that holds a secret of the pass — its hex in either
// case, or the secret itself in any case — is dropped; the digest the image reference pins is
// the user's own, and kept; so is one whose secret-looking part is a word of the image
// reference itself.
func TestPassDigest(t *testing.T) {
	t.Parallel()
	p := &pass{guard: &guard{secrets: &secrets{}}}
	p.guard.secrets.addBasic("robot", "hunter2!")
	p.guard.secrets.add("Bearer tok-abc123") // as the guard adds an Authorization: whole, and its value
	p.guard.secrets.add("tok-abc123")
	p.guard.secrets.add("Dead5eedC0de")
	padded := func(prefix string) string { return "sha256:" + prefix + strings.Repeat("0", 64-len(prefix)) }
	img := "registry.example:5000/rebellions/atom/rbln-driver:3.2.2"
	for d, want := range map[string]string{
		padded(hex.EncodeToString([]byte("hunter2!"))):                  "",
		padded("0f" + hex.EncodeToString([]byte("robot:hunter2!"))):     "",
		padded(hex.EncodeToString([]byte("tok-abc123"))):                "",
		padded("dead5eedc0de"):                                          "", // the secret itself, in another case
		padded("5eed"):                                                  padded("5eed"),
		padded(strings.ToUpper(hex.EncodeToString([]byte("hunter2!")))): "", // not an OCI digest
	} {
		assert.Equal(t, want, p.digest(img, d), "%s", d)
	}
	pinned := padded(hex.EncodeToString([]byte("hunter2!")))
	assert.Equal(t, pinned, p.digest("registry.example:5000/rebellions/atom/rbln-driver@"+pinned, pinned), "the digest the reference pins is the user's")
	short := &pass{guard: &guard{secrets: &secrets{}}}
	short.guard.secrets.addBasic("robot", "ab")
	assert.Equal(t, padded("ab"), short.digest("registry.example:5000/lab/rbln-driver:1", padded("ab")), "a secret the image itself holds is printed there anyway")
}

// TestRedactionPointsAtNothing (A2): a password that is a path segment of the image
// ("rebellions"), a word of driverguard's fixed phrases ("registry"), or one letter ("e")
// leaves every message whole — the image printed as it is, no "[redacted]" to read it off —
// while none of its other forms (base64 of user:password, the Authorization, hex) shows.
func TestRedactionPointsAtNothing(t *testing.T) {
	for _, pass := range []string{"rebellions", "registry", "e"} {
		for _, source := range []string{"Secret", "Docker config"} {
			t.Run(pass+"/"+source, func(t *testing.T) {
				t.Parallel()
				h := registrytest.NewHostile(t, hostileUser, pass, registrytest.ServerError)
				img := h.Host + "/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"
				src := SecretSource(pullSecret("drivercred", h.Host, hostileUser, pass, false))
				if source == "Docker config" {
					src = FileSource(sourceDockerConfig, configFile(t, h.Host, hostileUser, pass))
				}
				got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img}, Fixed(Keyring{src}))
				r := got[img]
				require.Equal(t, Warning, r.Status, r.Message)
				assert.Equal(t, ReasonOther, r.Reason)
				assert.Equal(t, "could not verify "+img+" (other; the pool proceeds, the kubelet decides whether the pull succeeds): check "+img+
					": the manifest request to "+h.Host+" was answered 501 Not Implemented: the registry failed to answer (a server error): check again later, or ask its operators",
					r.Message)
				// A form the result's own words print anyway is not a leak: the password as a word of
				// the message, or its hex ("65" for "e") among the digits of the config file's path.
				printed := strings.Join(append([]string{r.Message}, r.Credentials...), "\n")
				var never []string
				for _, f := range hostileNever(h) {
					if !strings.Contains(printed, f) {
						never = append(never, f)
					}
				}
				leaks(t, got, append(never, "[redacted]")...)
			})
		}
	}
}

// TestOutsideWordsAreRedacted: what a credential source says is wrong with it comes from
// outside driverguard (here an API server's error that repeats a password and a token) and is
// redacted of every secret of the pass — but not of one that the message's own words print
// anyway (the image's path segment "rebellions"); the source's name and the image are printed
// as they are.
func TestOutsideWordsAreRedacted(t *testing.T) {
	t.Parallel()
	host := unauthorized(t)
	img := host + "/rebellions/atom/rbln-driver:1.0"
	basic := registrytest.BasicAuth(hostileUser, "rebellions")
	broken := Source{Name: "Secret npu/rebellions", Problem: `reading it: etcd said password="rebellions", auth="` + basic + `", hex ` + hex.EncodeToString([]byte("rebellions"))}
	got := NewChecker(Options{Timeout: 5 * time.Second}).Check(t.Context(), []string{img},
		Fixed(Keyring{broken, SecretSource(pullSecret("drivercred", host, hostileUser, "rebellions", false))}))
	r := got[img]
	require.Equal(t, Warning, r.Status, r.Message)
	assert.Equal(t, ReasonUnauthorized, r.Reason)
	assert.Contains(t, r.Message, "check "+img+": the registry refused the credentials of Secret npu/drivercred (401 Unauthorized) for "+host+
		`; not usable: Secret npu/rebellions: reading it: etcd said password="rebellions", auth="[redacted]", hex [redacted]`)
	leaks(t, got, basic, hex.EncodeToString([]byte("rebellions")))

	s := &secrets{}
	s.addBasic("robot", "s3cr3t-pw")
	s.addBasic("robot", "rebellions")
	m := say("check " + img + ": ").then("Secret npu/x: ").quote("reading it: s3cr3t-pw and rebellions and " + hex.EncodeToString([]byte("s3cr3t-pw")))
	assert.Equal(t, "check "+img+": Secret npu/x: reading it: [redacted] and rebellions and [redacted]", s.render(m))
	assert.Equal(t, "Secret s3cr3t-pw: the words driverguard writes are its own", s.render(say("Secret s3cr3t-pw: the words driverguard writes are its own")))
}

// TestTokenAnswerSecretsAreItsTokens (A2b): from a token answer the pass learns its token
// fields — token, access_token, refresh_token, id_token, in any case, as encoding/json matches
// them — and nothing else: words a token endpoint puts in other fields (to have them hidden from
// messages) are not secrets. The body reaches its reader unchanged.
func TestTokenAnswerSecretsAreItsTokens(t *testing.T) {
	t.Parallel()
	const body = `{"token":"TOKEN-A-1234","Access_Token":"TOKEN-B-5678","refresh_token":"TOKEN-C-9012","ID_TOKEN":"TOKEN-D-3456",` +
		`"details":"NotFound the manifest request","scope":"repository:rebellions/atom/rbln-driver:pull","issued_at":"2025-01-01T00:00:00Z",` +
		`"nested":{"token":"NESTED-WORDS-HIDDEN"},"list":["LISTED-WORDS-HIDDEN"],"expires_in":300}`
	s := &secrets{}
	g := &guard{inner: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body))}, nil
	}), secrets: s}
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/token?scope=repository:a:pull&service=x", nil)
	require.NoError(t, err)
	resp, err := g.RoundTrip(req)
	require.NoError(t, err)
	read, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, body, string(read), "the body reaches go-containerregistry unchanged")
	for _, tok := range []string{"TOKEN-A-1234", "TOKEN-B-5678", "TOKEN-C-9012", "TOKEN-D-3456"} {
		assert.Equal(t, "<[redacted]>", s.redact("<"+tok+">"), tok)
		assert.Equal(t, "<[redacted]>", s.redact("<"+hex.EncodeToString([]byte(tok))+">"), "hex of %s", tok)
		assert.Equal(t, "<[redacted]>", s.redact("<"+strings.ToUpper(hex.EncodeToString([]byte(tok)))+">"), "HEX of %s", tok)
	}
	words := "NotFound the manifest request repository:rebellions/atom/rbln-driver:pull 2025-01-01T00:00:00Z NESTED-WORDS-HIDDEN LISTED-WORDS-HIDDEN"
	assert.Equal(t, words, s.redact(words), "only the token fields are secrets")
}

// TestSecretsHoldUserPasswordAndHex: a user's password is a secret as user:password too, and
// every secret in hex, lower and upper case.
func TestSecretsHoldUserPasswordAndHex(t *testing.T) {
	t.Parallel()
	s := &secrets{}
	s.addConfig(authn.AuthConfig{Username: "robot", Password: "pw-9f8e7d"})
	for _, form := range []string{"robot:pw-9f8e7d", hex.EncodeToString([]byte("pw-9f8e7d")), strings.ToUpper(hex.EncodeToString([]byte("pw-9f8e7d"))),
		hex.EncodeToString([]byte("robot:pw-9f8e7d")), strings.ToUpper(hex.EncodeToString([]byte("robot:pw-9f8e7d")))} {
		assert.NotContains(t, s.redact("x "+form+" y"), form)
		assert.True(t, s.holds("x"+strings.ToLower(form)+"y"), form)
	}
	assert.False(t, s.holds("nothing secret here"))
}
