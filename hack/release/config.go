package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/cli"

	"github.com/driverguard/driverguard/hack/image/imagebuild"
)

// config is what the environment asks of a release.
type config struct {
	version  string // SemVer 2, no leading v: the chart's version and appVersion
	registry string // host[:port][/path], no scheme
	// signKey names the key in signKeyring (a GnuPG secret keyring file); passphraseFile holds
	// its passphrase when it has one.
	signKey, signKeyring, passphraseFile string
	signKeyURL                           string // where the public key is published (optional)
	out                                  string
	pluginPlatforms                      string // hack/plugin.sh's PLATFORMS ("" for its default)
	imagePlatforms                       []v1.Platform
	allowDirty                           bool
	registryConfig                       string // Helm's registry config (a Docker config file)
	goCmd                                string
}

// semver is SemVer 2 without a leading v: what Helm requires of a chart's and a plugin's
// version.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// configFromEnv reads and checks the release's environment; every problem is wrong usage and
// names its variable.
func configFromEnv(getenv func(string) string, root string) (config, error) {
	c := config{
		version:        strings.TrimSpace(getenv("VERSION")),
		registry:       strings.TrimRight(strings.TrimSpace(getenv("REGISTRY")), "/"),
		signKey:        getenv("SIGN_KEY"),
		signKeyring:    getenv("SIGN_KEYRING"),
		passphraseFile: getenv("SIGN_PASSPHRASE_FILE"),
		signKeyURL:     getenv("SIGN_KEY_URL"),
		out:            getenv("OUT"),
		allowDirty:     getenv("ALLOW_DIRTY") == "1" || getenv("ALLOW_DIRTY") == "true",
		goCmd:          getenv("GO"),
		// HELM_REGISTRY_CONFIG, or Helm's default place for this user: where `helm registry
		// login` writes.
		registryConfig: cli.New().RegistryConfig,
	}
	if f := getenv("HELM_REGISTRY_CONFIG"); f != "" {
		c.registryConfig = f
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{"VERSION", c.version}, {"REGISTRY", c.registry}, {"SIGN_KEY", c.signKey}, {"SIGN_KEYRING", c.signKeyring},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return c, usageError{fmt.Sprintf("%s not set: a release needs a version, a registry and a signing key", strings.Join(missing, ", "))}
	}
	if !semver.MatchString(c.version) {
		return c, usageError{fmt.Sprintf("VERSION=%q is not a SemVer 2 version such as 1.2.3 or 1.2.3-rc.1 (no leading v): Helm refuses it as a chart's and a plugin's version", c.version)}
	}
	if err := checkRegistry(c.registry); err != nil {
		return c, usageError{err.Error()}
	}
	if c.out == "" {
		c.out = filepath.Join(root, "dist", "release")
	}
	c.out = absolute(c.out)
	c.signKeyring = absolute(c.signKeyring)
	if c.passphraseFile != "" {
		c.passphraseFile = absolute(c.passphraseFile)
	}
	if c.goCmd == "" {
		c.goCmd = "go"
	}
	c.pluginPlatforms = strings.TrimSpace(getenv("PLATFORMS"))
	for _, s := range strings.FieldsFunc(getenv("IMAGE_PLATFORMS"), func(r rune) bool { return r == ' ' || r == ',' }) {
		p, err := v1.ParsePlatform(s)
		if err != nil || p.OS != "linux" || p.Variant != "" {
			return c, usageError{fmt.Sprintf("IMAGE_PLATFORMS: %q is not a platform such as linux/amd64 (the image is Linux only)", s)}
		}
		c.imagePlatforms = append(c.imagePlatforms, *p)
	}
	if len(c.imagePlatforms) == 0 {
		c.imagePlatforms = imagebuild.DefaultPlatforms
	}
	return c, nil
}

// checkRegistry refuses a REGISTRY that is not host[:port][/path]: a scheme, a tag or a
// digest, upper case, or a name no image reference can have.
func checkRegistry(registry string) error {
	if strings.Contains(registry, "://") {
		return fmt.Errorf("REGISTRY=%q: give host[:port]/path without a scheme (oci://, https://): loopback registries are reached over plain HTTP, others over HTTPS", registry)
	}
	tagged := strings.Contains(registry, "/") && strings.Contains(lastSegment(registry), ":") // host:port alone has no tag
	if strings.ContainsRune(registry, '@') || tagged {
		return fmt.Errorf("REGISTRY=%q: give host[:port]/path without a tag or digest: the release pushes REGISTRY/driverguard:VERSION and REGISTRY/charts/driverguard:VERSION", registry)
	}
	if !strings.ContainsAny(hostOf(registry), ".:") && hostOf(registry) != "localhost" {
		return fmt.Errorf("REGISTRY=%q: %q is not a registry host (a name with a dot or a port, or localhost); it would be read as a path on the default registry", registry, hostOf(registry))
	}
	if _, port, err := net.SplitHostPort(hostOf(registry)); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("REGISTRY=%q: port %q is not a port number (1-65535)", registry, port)
		}
	}
	if _, err := name.NewRepository(registry+"/driverguard", name.StrictValidation); err != nil {
		return fmt.Errorf("REGISTRY=%q: %s/driverguard is not an image repository (%w): give host[:port]/path in lower case", registry, registry, err)
	}
	return nil
}

func lastSegment(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// hostOf is the host[:port] of REGISTRY.
func hostOf(registry string) string {
	host, _, _ := strings.Cut(registry, "/")
	return host
}

// loopback reports whether host[:port] is this machine's loopback: localhost, 127.0.0.0/8,
// ::1. Such a registry is reached over plain HTTP, by both pushes (Helm's --plain-http;
// go-containerregistry's insecure registry, which it picks by itself only for some of them).
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tag is VERSION as an OCI tag: SemVer's "+" is not allowed in tags, so Helm pushes a chart
// 1.2.3+build as 1.2.3_build; the image follows.
func (c config) tag() string { return strings.ReplaceAll(c.version, "+", "_") }

// imageRepository is the image's registry host[:port] and repository, as the chart's
// webhook.image.registry and .repository take them.
func (c config) imageRepository() (host, repository string) {
	host, path, _ := strings.Cut(c.registry, "/")
	if path == "" {
		return host, "driverguard"
	}
	return host, path + "/driverguard"
}

// image is the release's image reference, the chart's default webhook image.
func (c config) image() string { return c.registry + "/driverguard:" + c.tag() }

// chartTag is the chart's reference once pushed.
func (c config) chartTag() string { return c.registry + "/charts/driverguard:" + c.tag() }

// chartRef is where the chart is pushed (Helm appends the chart's name and version).
func (c config) chartRef() string { return "oci://" + c.registry + "/charts" }

func absolute(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// repoRoot is the module root: the directory of go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("the working directory: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "charts", "driverguard", "Chart.yaml")); err == nil {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", errors.New("run it in the driverguard repository (make release): no go.mod with charts/driverguard above " + dir)
		}
	}
}

// dirty lists the working tree's uncommitted changes (git status --porcelain); empty when
// it is clean or not a git checkout.
func dirty(root string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", errors.New("git not found: a release is built from a commit")
	}
	out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return "", fmt.Errorf("git status in %s: %w", root, err)
	}
	return strings.TrimSpace(string(out)), nil
}
