package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

// pushTimeout bounds each push (the image's blobs, the chart).
const pushTimeout = 10 * time.Minute

// helmKeychain is the credentials `helm registry login` stored: Helm's registry config is a
// Docker config file ({"auths": {"host:port": {"auth": ...}}}, or a credential helper).
type helmKeychain struct{ file *configfile.ConfigFile }

// loadHelmKeychain reads Helm's registry config; a missing file is no credentials (an
// anonymous push, or Docker's own). An unreadable one is an error: it would make a push fail
// for a reason the registry's 401 would not name.
func loadHelmKeychain(path string) (helmKeychain, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return helmKeychain{}, nil
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
	return helmKeychain{file: cf}, nil
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

// pushImage uploads the image index to ref with the credentials of Helm, then Docker. A
// loopback registry is reached over plain HTTP (go-containerregistry's choice for loopback).
func pushImage(ctx context.Context, idx v1.ImageIndex, ref string, kc helmKeychain) (name.Digest, error) {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	d, err := imagebuild.Push(ctx, idx, ref, remote.WithAuthFromKeychain(authn.NewMultiKeychain(kc, authn.DefaultKeychain)))
	if err != nil {
		return name.Digest{}, fmt.Errorf("%w (credentials: `helm registry login %s`, stored in %s, or Docker's)", err, hostOf(ref), kc.where())
	}
	return d, nil
}

func (k helmKeychain) where() string {
	if k.file == nil {
		return "Helm's registry config (none yet)"
	}
	return k.file.Filename
}

// pushChart pushes the chart archive and its .prov beside it to remote (oci://REGISTRY/charts)
// as `helm push` does, with the credentials `helm registry login` stored. It returns what Helm
// reports: the pushed reference and digest.
func pushChart(chartPath, remote, registryConfig string, plainHTTP bool, log io.Writer) (string, error) {
	opts := []registry.ClientOption{
		registry.ClientOptCredentialsFile(registryConfig),
		registry.ClientOptWriter(log),
		registry.ClientOptHTTPClient(&http.Client{Timeout: pushTimeout, Transport: http.DefaultTransport}),
	}
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return "", fmt.Errorf("a registry client: %w", err)
	}
	push := action.NewPushWithOpts(action.WithPushConfig(&action.Configuration{RegistryClient: client}), action.WithPlainHTTP(plainHTTP))
	out, err := push.Run(chartPath, remote)
	if err != nil {
		return "", fmt.Errorf("pushing the chart to %s: %w (credentials: `helm registry login %s`, stored in %s)", remote, err, hostOf(remote[len("oci://"):]), registryConfig)
	}
	return out, nil
}
