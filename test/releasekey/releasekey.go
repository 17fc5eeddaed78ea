// Package releasekey makes throwaway OpenPGP signing keys for the release tests, written as
// GnuPG exports them (`gpg --export-secret-keys` and `gpg --export`): the keyrings Helm signs
// and verifies with. No gpg is needed.
package releasekey

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/stretchr/testify/require"
)

// Key is a signing key's files.
type Key struct {
	// Name is the key's identity name (SIGN_KEY).
	Name string
	// Secring is the secret keyring (SIGN_KEYRING), Pubring the public one (--keyring).
	Secring, Pubring string
	// Passphrase is the file holding the secret key's passphrase (SIGN_PASSPHRASE_FILE); empty
	// for a key without one.
	Passphrase string
}

// New writes a fresh RSA key named name into a temporary directory; with passphrase, its
// secret part is encrypted with a random passphrase written to Key.Passphrase.
func New(t testing.TB, name string, passphrase bool) Key {
	t.Helper()
	cfg := &packet.Config{RSABits: 2048}
	e, err := openpgp.NewEntity(name, "", "", cfg)
	require.NoError(t, err)
	dir := t.TempDir()
	k := Key{Name: name, Secring: filepath.Join(dir, "secring.gpg"), Pubring: filepath.Join(dir, "pubring.gpg")}
	var pub, sec bytes.Buffer
	require.NoError(t, e.Serialize(&pub))
	if passphrase {
		b := make([]byte, 12)
		_, err := rand.Read(b)
		require.NoError(t, err)
		pass := []byte(hex.EncodeToString(b))
		require.NoError(t, e.EncryptPrivateKeys(pass, cfg))
		k.Passphrase = filepath.Join(dir, "passphrase")
		require.NoError(t, os.WriteFile(k.Passphrase, append(pass, '\n'), 0o600))
	}
	require.NoError(t, e.SerializePrivateWithoutSigning(&sec, cfg))
	require.NoError(t, os.WriteFile(k.Pubring, pub.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(k.Secring, sec.Bytes(), 0o600))
	return k
}
