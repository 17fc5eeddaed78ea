package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// StaticKeychain maps registry hosts (e.g. "repo.rebellions.ai", "localhost:5000",
// "index.docker.io") to authenticators. Hosts are normalised as in a docker config: scheme
// and path are dropped, and docker.io spellings mean name.DefaultRegistry. Registries not
// in the map are accessed anonymously.
type StaticKeychain map[string]authn.Authenticator

var _ authn.Keychain = StaticKeychain(nil)

// Resolve implements authn.Keychain.
func (k StaticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := k[normalizeHost(r.RegistryStr())]; ok {
		return a, nil
	}
	return authn.Anonymous, nil
}

// normalizeHost turns a docker config key or a registry name into a map key.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	if i := strings.IndexByte(h, '/'); i >= 0 {
		h = h[:i]
	}
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return h
}

// dockerConfigJSON is the content of a kubernetes.io/dockerconfigjson Secret.
type dockerConfigJSON struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

// KeychainFromDockerConfigJSON builds a keychain from the .dockerconfigjson data of a
// kubernetes.io/dockerconfigjson Secret ({"auths": {"host": {"auth": ..., "username": ...}}}).
func KeychainFromDockerConfigJSON(data []byte) (StaticKeychain, error) {
	var cfg dockerConfigJSON
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse docker config json: %w", err)
	}
	return fromAuths(cfg.Auths), nil
}

// KeychainFromDockerCfg builds a keychain from the .dockercfg data of a legacy
// kubernetes.io/dockercfg Secret ({"host": {"auth": ...}}).
func KeychainFromDockerCfg(data []byte) (StaticKeychain, error) {
	var auths map[string]authn.AuthConfig
	if err := json.Unmarshal(data, &auths); err != nil {
		return nil, fmt.Errorf("parse dockercfg: %w", err)
	}
	return fromAuths(auths), nil
}

func fromAuths(auths map[string]authn.AuthConfig) StaticKeychain {
	k := make(StaticKeychain, len(auths))
	// Sorted, so that among URL-shaped duplicates of one host the choice is stable; an exact
	// host key wins over all of them.
	for _, host := range slices.Sorted(maps.Keys(auths)) {
		key := normalizeHost(host)
		if _, dup := k[key]; dup && host != key {
			continue
		}
		k[key] = authn.FromConfig(auths[host])
	}
	return k
}

// KeychainFromSecrets builds one keychain from image pull Secrets, in order: for a registry
// found in several Secrets, the first Secret wins. Secrets of other types are ignored;
// malformed pull Secrets are an error naming the Secret.
func KeychainFromSecrets(secrets []corev1.Secret) (StaticKeychain, error) {
	out := StaticKeychain{}
	for i := range secrets {
		s := &secrets[i]
		var (
			k   StaticKeychain
			err error
		)
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			k, err = KeychainFromDockerConfigJSON(s.Data[corev1.DockerConfigJsonKey])
		case corev1.SecretTypeDockercfg:
			k, err = KeychainFromDockerCfg(s.Data[corev1.DockerConfigKey])
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		for host, a := range k {
			if _, ok := out[host]; !ok {
				out[host] = a
			}
		}
	}
	return out, nil
}
