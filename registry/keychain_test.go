package registry

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resolve(t *testing.T, kc authn.Keychain, image string) *authn.AuthConfig {
	t.Helper()
	ref, err := name.ParseReference(image)
	require.NoError(t, err)
	a, err := kc.Resolve(ref.Context())
	require.NoError(t, err)
	cfg, err := a.Authorization()
	require.NoError(t, err)
	return cfg
}

func TestKeychainFromDockerConfigJSON(t *testing.T) {
	t.Parallel()
	auth := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	data := []byte(`{"auths":{
		"repo.rebellions.ai": {"auth": "` + auth("robot", "pw") + `"},
		"https://index.docker.io/v1/": {"username": "hub", "password": "hubpw"},
		"https://mirror.example.com:5000/v2/": {"identitytoken": "tok"},
		"Upper.Example.COM": {"auth": "` + auth("u", "p") + `"}
	}}`)
	kc, err := KeychainFromDockerConfigJSON(data)
	require.NoError(t, err)

	tests := []struct {
		name  string
		image string
		want  authn.AuthConfig
	}{
		{"plain host", "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2", authn.AuthConfig{Username: "robot", Password: "pw"}},
		{"docker hub URL key", "docker.io/rebellions/rbln-k8s-driver-manager:v0.2.2", authn.AuthConfig{Username: "hub", Password: "hubpw"}},
		{"docker hub short name", "rebellions/rbln-k8s-driver-manager:v0.2.2", authn.AuthConfig{Username: "hub", Password: "hubpw"}},
		{"URL key with port and path", "mirror.example.com:5000/rebellions/rbln-driver:3.2.2", authn.AuthConfig{IdentityToken: "tok"}},
		{"host case", "upper.example.com/x:1", authn.AuthConfig{Username: "u", Password: "p"}},
		{"unknown registry is anonymous", "ghcr.io/x/y:1", authn.AuthConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := resolve(t, kc, tt.image)
			assert.Equal(t, tt.want.Username, got.Username)
			assert.Equal(t, tt.want.Password, got.Password)
			assert.Equal(t, tt.want.IdentityToken, got.IdentityToken)
		})
	}

	_, err = KeychainFromDockerConfigJSON([]byte("{not json"))
	require.Error(t, err)
}

func TestKeychainFromSecrets(t *testing.T) {
	t.Parallel()
	secret := func(name string, typ corev1.SecretType, key, data string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rbln-system"}, Type: typ, Data: map[string][]byte{key: []byte(data)}}
	}
	first := secret("first", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, `{"auths":{"repo.rebellions.ai":{"username":"one","password":"1"}}}`)
	second := secret("second", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey,
		`{"auths":{"repo.rebellions.ai":{"username":"two","password":"2"},"other.example.com":{"username":"o","password":"o"}}}`)
	legacy := secret("legacy", corev1.SecretTypeDockercfg, corev1.DockerConfigKey, `{"legacy.example.com":{"username":"l","password":"l"}}`)
	opaque := secret("opaque", corev1.SecretTypeOpaque, "x", "not a pull secret")

	kc, err := KeychainFromSecrets([]corev1.Secret{opaque, first, second, legacy})
	require.NoError(t, err)
	assert.Equal(t, "one", resolve(t, kc, "repo.rebellions.ai/a/b:c").Username, "the first Secret wins")
	assert.Equal(t, "o", resolve(t, kc, "other.example.com/a/b:c").Username)
	assert.Equal(t, "l", resolve(t, kc, "legacy.example.com/a/b:c").Username)

	broken := secret("broken", corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, "[")
	_, err = KeychainFromSecrets([]corev1.Secret{first, broken})
	require.ErrorContains(t, err, "secret rbln-system/broken")
}
