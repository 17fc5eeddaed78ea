package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/driverguard/driverguard/hack/image/imagebuild"
)

// The deadlines of the pushes: the whole image index (every platform's blobs), one request
// of the chart's.
const (
	imagePushTimeout = 30 * time.Minute
	chartPushTimeout = 10 * time.Minute
)

// helmKeychain is the credentials `helm registry login` stored: Helm's registry config is a
// Docker config file ({"auths": {"host:port": {"auth": ...}}}, or a credential helper).
type helmKeychain struct {
	path string
	file *configfile.ConfigFile // nil: no file yet
}

// loadHelmKeychain reads Helm's registry config; a missing file is no credentials (an
// anonymous push, or Docker's own). An unreadable one is an error: it would make a push fail
// for a reason the registry's 401 would not name.
func loadHelmKeychain(path string) (helmKeychain, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return helmKeychain{path: path}, nil
	}
	if err != nil {
		return helmKeychain{}, fmt.Errorf("reading the registry config of helm registry login: %w", err)
	}
	defer f.Close()
	cf, err := dockerconfig.LoadFromReader(f)
	if err != nil {
		return helmKeychain{}, fmt.Errorf("the registry config of helm registry login, %s: %w", path, err)
	}
	cf.Filename = path
	return helmKeychain{path: path, file: cf}, nil
}

// Resolve is authn.Keychain: the registry's entry, or anonymous.
func (k helmKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if k.file == nil {
		return authn.Anonymous, nil
	}
	ac, err := k.file.GetAuthConfig(target.RegistryStr())
	if err != nil {
		return nil, fmt.Errorf("the credentials of %s in Helm's registry config: %w", target.RegistryStr(), err)
	}
	cfg := authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}
	if cfg == (authn.AuthConfig{}) {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(cfg), nil
}

// preflightTimeout bounds the check of each push's credentials.
const preflightTimeout = 30 * time.Second

// tag is ref as a tag, insecure (plain HTTP) on loopback.
func tag(ref string, plainHTTP bool) (name.Tag, error) {
	opts := []name.Option{name.StrictValidation}
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	t, err := name.NewTag(ref, opts...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return t, nil
}

// checkPush asks the registry, before anything is built, whether the credentials may push to
// each of refs (go-containerregistry starts an upload and cancels it): a missing login fails in
// seconds, not after the builds.
func checkPush(ctx context.Context, refs []string, kc helmKeychain, plainHTTP bool) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = preflightTimeout
	tr.TLSHandshakeTimeout = preflightTimeout
	for _, ref := range refs {
		t, err := tag(ref, plainHTTP)
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- remote.CheckPushPermission(t, authn.NewMultiKeychain(kc, authn.DefaultKeychain), tr) }()
		select {
		case err = <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * preflightTimeout):
			err = fmt.Errorf("no answer within %s", 2*preflightTimeout)
		}
		if err != nil {
			return fmt.Errorf("may not push to %s: %w (%s)", ref, err, kc.loginHint(hostOf(ref), plainHTTP))
		}
	}
	return nil
}

// pushImage uploads the image index to ref with the credentials of Helm, then Docker, over
// plain HTTP on loopback.
func pushImage(ctx context.Context, idx v1.ImageIndex, ref string, kc helmKeychain, plainHTTP bool) (name.Digest, error) {
	ctx, cancel := context.WithTimeout(ctx, imagePushTimeout)
	defer cancel()
	t, err := tag(ref, plainHTTP)
	if err != nil {
		return name.Digest{}, err
	}
	d, err := imagebuild.PushTag(ctx, idx, t, remote.WithAuthFromKeychain(authn.NewMultiKeychain(kc, authn.DefaultKeychain)))
	if err != nil {
		return name.Digest{}, fmt.Errorf("%w (%s)", err, kc.loginHint(hostOf(ref), plainHTTP))
	}
	return d, nil
}

// loginHint says where the credentials come from and how to store them.
func (k helmKeychain) loginHint(host string, plainHTTP bool) string {
	login := "helm registry login " + host
	if plainHTTP {
		login += " --plain-http"
	}
	return fmt.Sprintf("credentials: `%s` stores them in %s; Docker's are tried after", login, k.path)
}

// digestLine is the digest Helm's registry client reports for a push.
var digestLine = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`)

// pushChart pushes the chart archive and its .prov beside it to remote (oci://REGISTRY/charts)
// as `helm push` does, with the credentials `helm registry login` stored, and returns the
// pushed chart's digest. Helm's push takes no context: a cancelled ctx returns at once and
// leaves the upload to the process's exit.
func pushChart(ctx context.Context, chartPath, remote string, kc helmKeychain, plainHTTP bool, log io.Writer) (string, error) {
	var out bytes.Buffer
	opts := []registry.ClientOption{
		registry.ClientOptCredentialsFile(kc.path),
		registry.ClientOptWriter(&out),
		registry.ClientOptHTTPClient(&http.Client{Timeout: chartPushTimeout, Transport: http.DefaultTransport}),
	}
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return "", fmt.Errorf("a registry client: %w", err)
	}
	push := action.NewPushWithOpts(action.WithPushConfig(&action.Configuration{RegistryClient: client}), action.WithPlainHTTP(plainHTTP))
	done := make(chan error, 1)
	go func() {
		_, err := push.Run(chartPath, remote)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		return "", fmt.Errorf("pushing the chart to %s: %w", remote, ctx.Err())
	}
	_, _ = log.Write(out.Bytes())
	if err != nil {
		return "", fmt.Errorf("pushing the chart to %s: %w (%s)", remote, err, kc.loginHint(hostOf(strings.TrimPrefix(remote, "oci://")), plainHTTP))
	}
	m := digestLine.FindSubmatch(out.Bytes())
	if m == nil {
		return "", fmt.Errorf("pushing the chart to %s: Helm reported no digest:\n%s", remote, out.String())
	}
	return string(m[1]), nil
}
