package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/credentials"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// A Source is one place credentials come from (README.md "Private registries"): a pull Secret, or a file in the
// Docker config format (--registry-config, Helm's registry config, the Docker config).
type Source struct {
	// Name says where, for messages: "Secret npu/drivercred", "--registry-config /etc/r.json",
	// "Docker config /root/.docker/config.json". Never anything read from it.
	Name string
	// Problem says why the source holds nothing usable ("" when it is fine): the Secret does
	// not exist, is not a pull Secret, does not parse.
	Problem string
	lookup  func(ctx context.Context, repo name.Repository) ([]match, error)
}

// match is one set of credentials a source holds for a repository, and the key it was found
// under (a Secret's registry key, a config file's server address).
type match struct {
	key  string
	auth authn.AuthConfig
}

// A Keyring is the sources a check may take credentials from, in order of preference.
type Keyring []Source

// Keys gives the keyring to try for one image; nil, or a nil Keyring, asks anonymously.
type Keys func(image string) Keyring

// Fixed gives every image the same keyring: the CLI's credentials when it reads files.
func Fixed(k Keyring) Keys { return func(string) Keyring { return k } }

// credential is one set of credentials to try for an image.
type credential struct {
	// source is the Source's name; key the entry it matched.
	source, key string
	auth        authn.AuthConfig
}

// id is a credential's identity within one pass: two images of a registry that match the
// same entry share its token.
func (c credential) id() string { return c.source + "\x00" + c.key }

// credentials returns the credentials the keyring holds for repo, in the order to try them,
// and what is wrong with the sources that hold nothing usable.
func (k Keyring) credentials(ctx context.Context, repo name.Repository) (creds []credential, problems []problem) {
	for _, s := range k {
		if s.Problem != "" {
			problems = append(problems, problem{source: s.Name, text: s.Problem})
			continue
		}
		if s.lookup == nil {
			continue
		}
		ms, err := s.lookup(ctx, repo)
		if err != nil {
			problems = append(problems, problem{source: s.Name, text: err.Error()})
			continue
		}
		for _, m := range ms {
			creds = append(creds, credential{source: s.Name, key: m.key, auth: m.auth})
		}
	}
	return creds, problems
}

// A problem is what is wrong with a source: its name (the user's own configuration) and what
// is wrong, in words that may come from outside driverguard (an API server's error, a file
// system's).
type problem struct{ source, text string }

// problemsMessage says what is wrong with each source, "; " between them.
func problemsMessage(problems []problem) message {
	ms := make([]message, len(problems))
	for i, p := range problems {
		ms[i] = say(p.source + ": ").quote(p.text)
	}
	return joinMessages(ms, "; ")
}

// names are the names of the keyring's sources, "" for none.
func (k Keyring) names() string {
	var out []string
	for _, s := range k {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}

// MaxCredentialsSize bounds a pull Secret's data and a registry config file: a Docker config
// is a few kilobytes.
const MaxCredentialsSize = 1 << 20

// SecretSource is a pull Secret as the kubelet reads it: kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg, its registry keys matched against an image as the kubelet matches
// them (a host, a host with a path prefix, "*" globs per domain component; the most specific
// key first).
func SecretSource(s *corev1.Secret) Source {
	src := Source{Name: "Secret " + s.Namespace + "/" + s.Name}
	var (
		auths map[string]authn.AuthConfig
		data  []byte
	)
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		data = s.Data[corev1.DockerConfigJsonKey]
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := decodeJSON(data, &cfg); err != nil {
			src.Problem = fmt.Sprintf("its %s does not parse: %s", corev1.DockerConfigJsonKey, jsonProblem(err))
			return src
		}
		auths = cfg.Auths
	case corev1.SecretTypeDockercfg:
		data = s.Data[corev1.DockerConfigKey]
		if err := decodeJSON(data, &auths); err != nil {
			src.Problem = fmt.Sprintf("its %s does not parse: %s", corev1.DockerConfigKey, jsonProblem(err))
			return src
		}
	default:
		src.Problem = fmt.Sprintf("of type %q, not a pull Secret (%s or %s)", s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
		return src
	}
	entries := kubeletEntries(auths)
	if len(entries) == 0 {
		src.Problem = "holds no registry credentials"
		return src
	}
	src.lookup = func(_ context.Context, repo name.Repository) ([]match, error) {
		var out []match
		target := repo.RegistryStr() + "/" + repo.RepositoryStr()
		for _, e := range entries {
			if urlsMatch(e.key, target) {
				out = append(out, match{key: e.key, auth: e.auth})
			}
		}
		return out, nil
	}
	return src
}

// MissingSecret is a pull Secret a driver names that could not be read.
func MissingSecret(namespace, name string, err error) Source {
	return Source{Name: "Secret " + namespace + "/" + name, Problem: err.Error()}
}

// jsonProblem says why a pull Secret's data or a Docker config file does not parse, without a
// byte of it: the data holds credentials, and a Secret's problem is repeated in every warning
// of its images.
func jsonProblem(err error) string {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON (a syntax error at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s where the Docker config format wants a %s", typ.Value, typ.Type)
	case says(err, "unable to decode auth field"), errors.As(err, new(base64.CorruptInputError)):
		return `an "auth" that is not base64 of user:password`
	case errors.As(err, new(dataError)):
		return err.Error()
	}
	return "not the Docker config format"
}

// dataError is what decodeJSON says of data before parsing it: its size.
type dataError string

func (e dataError) Error() string { return string(e) }

func decodeJSON(data []byte, v any) error {
	if len(data) == 0 {
		return dataError("empty")
	}
	if len(data) > MaxCredentialsSize {
		return dataError(fmt.Sprintf("%d bytes, more than the %d a registry config may hold", len(data), MaxCredentialsSize))
	}
	return json.Unmarshal(data, v)
}

// kubeletEntries turns a Docker config's auths into the kubelet's keys: the scheme dropped, a
// /v1/ or /v2/ path taken for the host alone, Docker Hub's spellings made index.docker.io;
// sorted in reverse, so that the most specific key is tried first. Keys that do not parse are
// skipped, as the kubelet skips them.
func kubeletEntries(auths map[string]authn.AuthConfig) []match {
	var out []match
	for raw, a := range auths {
		v := raw
		if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			v = "https://" + v
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			continue
		}
		host := strings.ToLower(u.Host)
		switch host {
		case "docker.io", "registry-1.docker.io":
			host = name.DefaultRegistry
		}
		p := u.Path
		if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
			p = p[3:]
		}
		key := host
		if p != "" && p != "/" {
			key = host + strings.TrimSuffix(p, "/")
		}
		out = append(out, match{key: key, auth: a})
	}
	slices.SortFunc(out, func(a, b match) int { return strings.Compare(b.key, a.key) })
	return slices.CompactFunc(out, func(a, b match) bool { return a.key == b.key })
}

// urlsMatch reports whether the kubelet's key glob matches target (both without a scheme): the
// same number of domain components, each matched as a glob, the same port, and the key's path
// a prefix of the target's.
func urlsMatch(glob, target string) bool {
	gu, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	tu, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gHost, gPort := splitHostPort(gu.Host)
	tHost, tPort := splitHostPort(strings.ToLower(tu.Host))
	if gPort != tPort {
		return false
	}
	gParts, tParts := strings.Split(gHost, "."), strings.Split(tHost, ".")
	if len(gParts) != len(tParts) {
		return false
	}
	for i := range gParts {
		if ok, err := path.Match(gParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return strings.HasPrefix(tu.Path, gu.Path)
}

func splitHostPort(hostport string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return hostport, ""
}

// FileSource reads a file in the Docker config format (auths, credsStore, credHelpers) as
// docker and Helm do: the image's repository key first, then its registry host (for Docker
// Hub every spelling docker and Helm write), each key that holds credentials tried in that
// order. A credential helper the file names runs within the check's deadline, its process
// group killed at the deadline; what it prints never reaches a message. Each key is looked
// up once per Source. An unreadable or unparsable file is a Source with a Problem.
func FileSource(label, file string) Source {
	src := Source{Name: label + " " + file}
	cf, err := loadConfigFile(file)
	if err != nil {
		src.Problem = err.Error()
		return src
	}
	fc := &fileCreds{cf: cf, cache: map[string]authn.AuthConfig{}}
	src.lookup = func(ctx context.Context, repo name.Repository) ([]match, error) {
		keys := []string{repo.String(), repo.RegistryStr()}
		if repo.RegistryStr() == name.DefaultRegistry {
			keys = []string{repo.String(), authn.DefaultAuthKey, name.DefaultRegistry, "docker.io", "registry-1.docker.io"}
		}
		var out []match
		for _, key := range keys {
			a, err := fc.get(ctx, key)
			if err != nil {
				return out, err
			}
			if a != (authn.AuthConfig{}) && !slices.ContainsFunc(out, func(m match) bool { return m.auth == a }) {
				out = append(out, match{key: key, auth: a})
			}
		}
		return out, nil
	}
	return src
}

// fileCreds are the credentials of one Docker config file, looked up once per key.
type fileCreds struct {
	cf    *configfile.ConfigFile
	mu    sync.Mutex
	cache map[string]authn.AuthConfig
}

func (f *fileCreds) get(ctx context.Context, key string) (authn.AuthConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.cache[key]; ok {
		return a, nil
	}
	var a authn.AuthConfig
	helper := f.cf.CredentialHelpers[key]
	if helper == "" {
		helper = f.cf.CredentialsStore
	}
	if helper != "" {
		var err error
		if a, err = runHelper(ctx, helper, key); err != nil {
			return a, err
		}
	}
	if a == (authn.AuthConfig{}) {
		// The file's own auths, matched by host as docker matches them.
		c, err := credentials.NewFileStore(f.cf).Get(key)
		if err != nil {
			return a, err
		}
		a = authn.AuthConfig{Username: c.Username, Password: c.Password, Auth: c.Auth, IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
	}
	f.cache[key] = a
	return a, nil
}

// maxHelperOutput bounds what a credential helper may print.
const maxHelperOutput = 64 << 10

// runHelper asks docker-credential-<helper> for the credentials of serverURL (the helpers'
// protocol: "get", the URL on stdin, JSON on stdout). None found is no credentials; anything
// else that goes wrong is an error that says what, never what the helper printed.
func runHelper(ctx context.Context, helper, serverURL string) (authn.AuthConfig, error) {
	program := "docker-credential-" + helper
	cmd := exec.CommandContext(ctx, program, "get")
	cmd.Stdin = strings.NewReader(serverURL)
	out := &limitedBuffer{max: maxHelperOutput}
	cmd.Stdout, cmd.Stderr = out, io.Discard
	killGroupOnCancel(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return authn.AuthConfig{}, fmt.Errorf("its credential helper %s did not answer within the check's deadline", program)
	case err != nil && strings.Contains(out.String(), "credentials not found"):
		return authn.AuthConfig{}, nil
	case errors.Is(err, exec.ErrNotFound):
		return authn.AuthConfig{}, fmt.Errorf("its credential helper %s is not on PATH", program)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return authn.AuthConfig{}, fmt.Errorf("its credential helper %s failed (%s; what it printed is not shown: it may hold a secret)", program, exit.ProcessState)
		}
		return authn.AuthConfig{}, fmt.Errorf("its credential helper %s could not run", program)
	case out.over:
		return authn.AuthConfig{}, fmt.Errorf("its credential helper %s printed more than %d bytes", program, maxHelperOutput)
	}
	var c struct{ Username, Secret string }
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		return authn.AuthConfig{}, fmt.Errorf("its credential helper %s printed something that is not its JSON answer", program)
	}
	if c.Username == "<token>" {
		return authn.AuthConfig{IdentityToken: c.Secret}, nil
	}
	return authn.AuthConfig{Username: c.Username, Password: c.Secret}, nil
}

// limitedBuffer keeps the first max bytes written to it and says whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// loadConfigFile reads a Docker config file through MaxCredentialsSize: a regular file only
// (a FIFO or a device would block or never end).
func loadConfigFile(file string) (*configfile.ConfigFile, error) {
	st, err := os.Stat(file)
	switch {
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, errors.New("a directory, not a Docker config file")
	case !st.Mode().IsRegular():
		return nil, errors.New("not a regular file (a FIFO, a device, a socket): give the Docker config file itself")
	case st.Size() > MaxCredentialsSize:
		return nil, fmt.Errorf("%d bytes, larger than the %d a registry config may hold", st.Size(), MaxCredentialsSize)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxCredentialsSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxCredentialsSize {
		return nil, fmt.Errorf("larger than the %d bytes a registry config may hold", MaxCredentialsSize)
	}
	cf, err := config.LoadFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("does not parse as a Docker config: %s", jsonProblem(err))
	}
	cf.Filename = file
	return cf, nil
}
