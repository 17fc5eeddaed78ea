package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/driverguard/driverguard/hack/image/imagebuild"
)

// releaser runs one release.
type releaser struct {
	cfg  config
	root string
	log  io.Writer
}

// result is what a release published.
type result struct {
	cfg         config
	image       name.Digest
	chartDigest string
	fingerprint string
	files       []string // OUT's files, relative
}

func (r *releaser) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "release: "+format+"\n", args...)
}

// release builds and signs everything into OUT, then pushes the image and the chart.
func (r *releaser) release(ctx context.Context) (*result, error) {
	c := r.cfg
	if !c.allowDirty {
		changes, err := dirty(r.root)
		if err != nil {
			return nil, err
		}
		if changes != "" {
			return nil, fmt.Errorf("the working tree has uncommitted changes; a release is built from a commit (commit or stash them; ALLOW_DIRTY=1 releases the files as they are, for a test release):\n%s", changes)
		}
	}
	if err := emptyDir(c.out); err != nil {
		return nil, err
	}
	sign, err := newSigner(c.signKeyring, c.signKey, c.passphraseFile)
	if err != nil {
		return nil, usageError{err.Error()} // SIGN_KEY, SIGN_KEYRING or SIGN_PASSPHRASE_FILE
	}
	kc, err := loadHelmKeychain(c.registryConfig)
	if err != nil {
		return nil, err
	}
	plainHTTP := loopback(hostOf(c.registry))
	res := &result{cfg: c, fingerprint: sign.fingerprint}

	// The chart first: a REGISTRY its values schema refuses fails before anything is built.
	src, cleanup, err := r.source(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ch, err := releaseChart(src, c, sign.fingerprint)
	if err != nil {
		return nil, err
	}
	// May the credentials push? Asked before the builds, not after.
	if err := checkPush(ctx, []string{c.image(), c.chartTag()}, kc, plainHTTP); err != nil {
		return nil, err
	}
	chartPath, err := chartutil.Save(ch, c.out)
	if err != nil {
		return nil, fmt.Errorf("packaging the chart: %w", err)
	}
	if err := sign.signChart(chartPath); err != nil {
		return nil, err
	}
	r.logf("chart %s signed (key %s)", filepath.Base(chartPath), sign.fingerprint)

	// The plugins, the Helm 4 ones signed, with an SBOM of each binary.
	if err := r.plugins(ctx, src, sign); err != nil {
		return nil, err
	}

	// The image, with an SBOM of each platform's binary.
	r.logf("building the image %s (%s)", c.image(), platformList(c.imagePlatforms))
	built, err := imagebuild.Build(ctx, imagebuild.Options{
		Dir: src, Platforms: c.imagePlatforms, Version: c.tag(), Repository: c.registry + "/driverguard",
		WorkingTree: true, Go: c.goCmd, // src is the clean checkout (or, ALLOW_DIRTY, the tree as it is)
	})
	if err != nil {
		return nil, fmt.Errorf("building the image: %w", err)
	}
	for _, pi := range built.Images {
		file := filepath.Join(c.out, fmt.Sprintf("driverguard-image-%s-%s-%s.spdx.json", c.version, pi.Platform.OS, pi.Platform.Architecture))
		if err := os.WriteFile(file, pi.SBOM, 0o644); err != nil {
			return nil, fmt.Errorf("writing the image's SBOM: %w", err)
		}
	}

	// Checksums of everything in OUT, before anything is published.
	if res.files, err = writeSums(c.out); err != nil {
		return nil, err
	}

	// Publish: the image, then the chart that points to it.
	if res.image, err = pushImage(ctx, built.Index, c.image(), kc, plainHTTP); err != nil {
		return nil, err
	}
	r.logf("pushed %s", res.image)
	if res.chartDigest, err = pushChart(ctx, chartPath, c.chartRef(), kc, plainHTTP, r.log); err != nil {
		return nil, fmt.Errorf("%w; the image %s is pushed already: run the release again (it pushes the same image) once the chart can be pushed", err, res.image)
	}
	r.logf("pushed the chart and its provenance to %s/driverguard:%s", c.chartRef(), c.tag())
	return res, nil
}

// source is the tree the release is built from: a clean checkout of HEAD in a temporary
// directory (untracked and ignored files are not released), or with ALLOW_DIRTY the working
// tree as it is. cleanup removes the checkout.
func (r *releaser) source(ctx context.Context) (dir string, cleanup func(), err error) {
	if r.cfg.allowDirty {
		return r.root, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "driverguard-release-")
	if err != nil {
		return "", nil, fmt.Errorf("a directory for the checkout: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	dir, _, err = imagebuild.Checkout(ctx, r.root, tmp)
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("checking out HEAD: %w", err)
	}
	return dir, cleanup, nil
}

// plugins runs src's hack/plugin.sh into OUT, signs the Helm 4 tarballs and writes an SBOM of
// each platform's binary.
func (r *releaser) plugins(ctx context.Context, src string, sign *signer) error {
	c := r.cfg
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(src, "hack", "plugin.sh"))
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = r.log, r.log
	// Its own process group, stopped with SIGTERM: plugin.sh removes its staging directory and
	// its go build goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	// Not SIGN_KEY: the release signs the tarballs itself, with the key it has unlocked.
	cmd.Env = append(withoutEnv(os.Environ(), "SIGN_KEY", "SIGN_KEYRING", "SIGN_PASSPHRASE_FILE", "OUT", "VERSION", "GO"),
		"OUT="+c.out, "VERSION="+c.version, "GO="+c.goCmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/plugin.sh: %w", err)
	}
	if err := os.Remove(filepath.Join(c.out, "SHA256SUMS")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	cli, err := filepath.Glob(filepath.Join(c.out, "driverguard-"+c.version+"-*-*.tgz"))
	if err != nil {
		return err
	}
	if len(cli) == 0 {
		return errors.New("hack/plugin.sh wrote no plugin tarball")
	}
	for _, tgz := range cli {
		platform := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tgz), "driverguard-"+c.version+"-"), ".tgz")
		for _, p := range []string{tgz, filepath.Join(c.out, "driverguard-check-"+c.version+"-"+platform+".tgz")} {
			if err := sign.signPlugin(p); err != nil {
				return err
			}
		}
		data, err := os.ReadFile(tgz)
		if err != nil {
			return err
		}
		bin, err := fileInTgz(data, func(n string) bool { return n == "driverguard/bin/driverguard" })
		if err != nil {
			return fmt.Errorf("%s: bin/driverguard: %w", filepath.Base(tgz), err)
		}
		goos, goarch, _ := strings.Cut(platform, "-")
		doc, err := imagebuild.BinarySBOM("plugin", bin, v1.Platform{OS: goos, Architecture: goarch}, c.version, "", time.Time{})
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(tgz), err)
		}
		if err := os.WriteFile(filepath.Join(c.out, "driverguard-"+c.version+"-"+platform+".spdx.json"), doc, 0o644); err != nil {
			return err
		}
	}
	r.logf("plugins for %d platforms signed", len(cli))
	return nil
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// emptyDir creates dir, or accepts it empty: a release never mixes with another's files.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("OUT: %w", err)
	}
	if len(entries) > 0 {
		return usageError{fmt.Sprintf("OUT=%s is not empty: a release writes into an empty or new directory (remove it, or choose another)", dir)}
	}
	return nil
}

// writeSums writes OUT/SHA256SUMS (sha256sum's format, `sha256sum -c SHA256SUMS` checks it)
// over every file in OUT, and returns their names.
func writeSums(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel != "SHA256SUMS" {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing OUT: %w", err)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return append(files, "SHA256SUMS"), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func platformList(ps []v1.Platform) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.OS+"/"+p.Architecture)
	}
	return strings.Join(s, ", ")
}

// print tells what was published and how a user checks it.
func (res *result) print(w io.Writer) {
	c := res.cfg
	fmt.Fprintf(w, "released driverguard %s\n", c.version)
	fmt.Fprintf(w, "  chart   %s/driverguard:%s@%s (signed, key %s)\n", c.chartRef(), c.tag(), res.chartDigest, res.fingerprint)
	fmt.Fprintf(w, "  image   %s\n", res.image)
	fmt.Fprintf(w, "  files   %s: %s\n", c.out, strings.Join(res.files, ", "))
	fmt.Fprintf(w, "check it: helm pull %s/driverguard --version %s --verify --keyring PUBRING", c.chartRef(), c.version)
	if loopback(hostOf(c.registry)) {
		fmt.Fprint(w, " --plain-http")
	}
	fmt.Fprintln(w)
}
