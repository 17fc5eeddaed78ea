package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"helm.sh/helm/v3/pkg/provenance"
	"sigs.k8s.io/yaml"
)

// signer signs the chart and the plugins with one key, unlocked once.
type signer struct {
	sig         *provenance.Signatory
	fingerprint string // upper-case hex, as Artifact Hub and gpg print it
}

// newSigner loads the key named key from keyring (a GnuPG secret keyring file) and unlocks it
// with the first line of passphraseFile when it is encrypted. It never prompts: a release runs
// unattended.
func newSigner(keyring, key, passphraseFile string) (*signer, error) {
	if _, err := os.Stat(keyring); err != nil {
		return nil, fmt.Errorf("SIGN_KEYRING: %w (a GnuPG secret keyring: gpg --export-secret-keys KEY > secring.gpg)", err)
	}
	sig, err := provenance.NewFromKeyring(keyring, key)
	if err != nil {
		return nil, fmt.Errorf("SIGN_KEYRING %s: %w", keyring, err)
	}
	if sig.Entity == nil {
		return nil, fmt.Errorf("SIGN_KEY=%q names no key in %s (keys: %s)", key, keyring, identities(sig))
	}
	if sig.Entity.PrivateKey == nil {
		return nil, fmt.Errorf("SIGN_KEYRING %s holds only the public part of %q: export the secret key (gpg --export-secret-keys)", keyring, key)
	}
	if sig.Entity.PrivateKey.Encrypted {
		if passphraseFile == "" {
			return nil, fmt.Errorf("the key %q has a passphrase: set SIGN_PASSPHRASE_FILE to a file holding it (a release never prompts)", key)
		}
		pass, err := firstLine(passphraseFile)
		if err != nil {
			return nil, fmt.Errorf("SIGN_PASSPHRASE_FILE: %w", err)
		}
		if err := sig.DecryptKey(func(string) ([]byte, error) { return pass, nil }); err != nil {
			return nil, fmt.Errorf("unlocking the key %q with SIGN_PASSPHRASE_FILE %s (is it the passphrase?): %w", key, passphraseFile, err)
		}
	}
	return &signer{sig: sig, fingerprint: strings.ToUpper(hex.EncodeToString(sig.Entity.PrimaryKey.Fingerprint))}, nil
}

func identities(sig *provenance.Signatory) string {
	var ids []string
	for _, e := range sig.KeyRing {
		for id := range e.Identities {
			ids = append(ids, fmt.Sprintf("%q", id))
		}
	}
	if len(ids) == 0 {
		return "none"
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

func firstLine(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, _, err := bufio.NewReader(f).ReadLine()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return line, nil
}

// signChart writes chartPath+".prov": Helm's provenance of a chart archive (what `helm
// package --sign` writes and `helm pull --verify` checks).
func (s *signer) signChart(chartPath string) error {
	prov, err := s.sig.ClearSign(chartPath)
	if err != nil {
		return fmt.Errorf("signing %s: %w", filepath.Base(chartPath), err)
	}
	return os.WriteFile(chartPath+".prov", []byte(prov), 0o644)
}

// signPlugin writes pluginPath+".prov" in the provenance format Helm 4 verifies at `helm
// plugin install`: the plugin's plugin.yaml, then "...", then the SHA-256 of the tarball under
// its file name, clear-signed (SHA-512). Helm 4's own `helm plugin package --sign` names the
// tarball <name>-<version>.tgz; signing here keeps the release's per-platform names, which
// the .prov records.
func (s *signer) signPlugin(pluginPath string) error {
	data, err := os.ReadFile(pluginPath)
	if err != nil {
		return err
	}
	meta, err := pluginYAML(data)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(pluginPath), err)
	}
	name, version, err := pluginNameVersion(meta)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(pluginPath), err)
	}
	h := sha256.Sum256(data)
	sum := "sha256:" + hex.EncodeToString(h[:])
	// The tarball under its published name (what `helm plugin install FILE` verifies) and
	// under the name Helm 4 keeps it as once installed, <name>-<version>.tgz (what `helm plugin
	// list` checks to say "signed"): one digest, two names.
	files, err := yaml.Marshal(provenance.SumCollection{Files: map[string]string{
		filepath.Base(pluginPath):     sum,
		name + "-" + version + ".tgz": sum,
	}})
	if err != nil {
		return err
	}
	var msg bytes.Buffer
	msg.Write(bytes.TrimRight(meta, "\n"))
	msg.WriteString("\n...\n")
	msg.Write(files)

	var out bytes.Buffer
	w, err := clearsign.Encode(&out, s.sig.Entity.PrivateKey, &packet.Config{DefaultHash: crypto.SHA512})
	if err != nil {
		return fmt.Errorf("signing %s: %w", filepath.Base(pluginPath), err)
	}
	if _, err := w.Write(msg.Bytes()); err != nil {
		return fmt.Errorf("signing %s: %w", filepath.Base(pluginPath), err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("signing %s: %w", filepath.Base(pluginPath), err)
	}
	return os.WriteFile(pluginPath+".prov", out.Bytes(), 0o644)
}

// pluginNameVersion reads a plugin.yaml's name and version.
func pluginNameVersion(meta []byte) (name, version string, err error) {
	var m struct{ Name, Version string }
	if err := yaml.Unmarshal(meta, &m); err != nil {
		return "", "", fmt.Errorf("plugin.yaml: %w", err)
	}
	if m.Name == "" || m.Version == "" {
		return "", "", errors.New("plugin.yaml has no name or no version")
	}
	return m.Name, m.Version, nil
}

// pluginYAML is the plugin.yaml of a plugin tarball: at its root or in the plugin's directory.
func pluginYAML(tgz []byte) ([]byte, error) {
	file, err := fileInTgz(tgz, func(name string) bool {
		return path.Base(name) == "plugin.yaml" && strings.Count(strings.Trim(name, "/"), "/") <= 1
	})
	if err != nil {
		return nil, fmt.Errorf("plugin.yaml: %w", err)
	}
	if bytes.Contains(file, []byte("\n...\n")) {
		return nil, errors.New(`plugin.yaml holds a YAML document end ("..."), which the provenance format uses as its separator`)
	}
	return file, nil
}

// fileInTgz is the first regular file of a gzipped tarball whose name match accepts.
func fileInTgz(tgz []byte, match func(name string) bool) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("not a gzipped tarball: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no such file in the tarball")
		}
		if err != nil {
			return nil, fmt.Errorf("reading the tarball: %w", err)
		}
		if h.Typeflag == tar.TypeReg && match(strings.TrimPrefix(h.Name, "./")) {
			return io.ReadAll(io.LimitReader(tr, 512<<20))
		}
	}
}
