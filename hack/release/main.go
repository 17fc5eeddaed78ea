// Command release publishes a driverguard release the way charts are consumed (make release;
// RELEASING.md):
//
//	make release VERSION=1.2.3 REGISTRY=host[:port]/path SIGN_KEY='driverguard releases' \
//	    SIGN_KEYRING=secring.gpg [SIGN_PASSPHRASE_FILE=pass.txt] [OUT=dist/release]
//
// It builds and signs everything before it pushes anything:
//
//   - the chart, version and appVersion VERSION, its default webhook image
//     REGISTRY/driverguard:VERSION, packaged and signed (OUT/driverguard-VERSION.tgz and its
//     .prov, Helm's provenance format);
//   - the Helm plugins (hack/plugin.sh) for every platform of PLATFORMS, the Helm 4 ones each
//     with a .prov that `helm plugin install FILE --keyring PUBRING` verifies;
//   - the multi-platform image (hack/image), and an SPDX SBOM of every binary: the image's
//     and the plugins';
//
// then pushes the image to REGISTRY/driverguard:VERSION and, last, the chart with its
// provenance to oci://REGISTRY/charts/driverguard:VERSION (a chart is never published before
// the image it points to), and writes OUT/SHA256SUMS over everything in OUT.
//
// Every push uses the credentials of `helm registry login` (Helm's registry config,
// HELM_REGISTRY_CONFIG, a Docker config file), then Docker's. A registry on loopback is
// reached over plain HTTP, as Helm and the image tools do for local registries.
//
// Environment: VERSION, REGISTRY, SIGN_KEY, SIGN_KEYRING (required); SIGN_PASSPHRASE_FILE,
// SIGN_KEY_URL (where the public key is published: the chart's artifacthub.io/signKey), OUT
// (default dist/release), PLATFORMS (the plugins', default hack/plugin.sh's), IMAGE_PLATFORMS
// (default "linux/amd64 linux/arm64"), ALLOW_DIRTY=1 (build the working tree as it is, for a
// test release; a release is otherwise built from the HEAD commit of a clean tree),
// HELM_REGISTRY_CONFIG, GO.
//
// `go run ./hack/release sign-plugin FILE.tgz...` only signs Helm 4 plugin tarballs the same
// way, each with FILE.tgz.prov beside it (make plugin SIGN_KEY=...).
//
// Exit codes: 0 released, 1 failure, 2 wrong usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// usageError is wrong usage: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usageText = `usage: make release VERSION=<semver> REGISTRY=<host[:port]/path> SIGN_KEY=<key name> SIGN_KEYRING=<secret keyring>
    [SIGN_PASSPHRASE_FILE=<file>] [SIGN_KEY_URL=<url of the public key>] [OUT=dist/release]
    [PLATFORMS="linux/amd64 linux/arm64 darwin/arm64"] [IMAGE_PLATFORMS="linux/amd64 linux/arm64"] [ALLOW_DIRTY=1]
       go run ./hack/release sign-plugin FILE.tgz...   (SIGN_KEY, SIGN_KEYRING, SIGN_PASSPHRASE_FILE: make plugin SIGN_KEY=...)
(RELEASING.md)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "release: %v\n%s", err, usageText)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usageText)
		return nil
	}
	if len(args) > 0 && args[0] == "sign-plugin" {
		return signPlugins(args[1:], getenv, stdout)
	}
	if len(args) != 0 {
		return usageError{fmt.Sprintf("release takes no arguments (the environment configures it), got %q", args)}
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cfg, err := configFromEnv(getenv, root)
	if err != nil {
		return err
	}
	r := &releaser{cfg: cfg, root: root, log: stderr}
	res, err := r.release(ctx)
	if err != nil {
		return err
	}
	res.print(stdout)
	return nil
}

// signPlugins writes FILE.prov for each plugin tarball with the key SIGN_KEY of SIGN_KEYRING
// (default ~/.gnupg/secring.gpg).
func signPlugins(files []string, getenv func(string) string, stdout io.Writer) error {
	if len(files) == 0 {
		return usageError{"sign-plugin takes the plugin tarballs to sign"}
	}
	key, keyring := getenv("SIGN_KEY"), getenv("SIGN_KEYRING")
	if key == "" {
		return usageError{"SIGN_KEY not set: the name of the signing key"}
	}
	if keyring == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return usageError{"SIGN_KEYRING not set and no home directory: the secret keyring file"}
		}
		keyring = filepath.Join(home, ".gnupg", "secring.gpg")
	}
	sign, err := newSigner(keyring, key, getenv("SIGN_PASSPHRASE_FILE"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := sign.signPlugin(f); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "signed %s: %s.prov (key %s)\n", f, f, sign.fingerprint)
	}
	return nil
}
