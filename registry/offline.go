package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/helmpath"
)

// Labels of the offline sources, as messages name them.
const (
	sourceRegistryConfigFlag = "--registry-config"
	sourceHelmRegistryConfig = "Helm registry config"
	sourceDockerConfig       = "Docker config"
)

// OfflineKeyring is the CLI's credentials when it reads files (README.md "Private registries"): the credentials the
// user already has. First registryConfig (--registry-config, Helm's flag: a file in the Docker
// config format), which must exist; without it Helm's registry config ($HELM_REGISTRY_CONFIG,
// or Helm's default path) when it exists. Then the Docker config ($DOCKER_CONFIG/config.json,
// or ~/.docker/config.json) when it exists, with its credential helpers.
func OfflineKeyring(registryConfig string) (Keyring, error) {
	var k Keyring
	if registryConfig != "" {
		// Named by a flag: what cannot be used is an error, not a warning per image.
		src := FileSource(sourceRegistryConfigFlag, registryConfig)
		if src.Problem != "" {
			return nil, fmt.Errorf("%s %s: %s; give a Docker config file (config.json: {\"auths\": {\"HOST\": {\"auth\": \"base64 of user:password\"}}})",
				sourceRegistryConfigFlag, registryConfig, strings.TrimPrefix(src.Problem, "open "+registryConfig+": "))
		}
		k = append(k, src)
	} else if f := helmRegistryConfig(); exists(f) {
		k = append(k, FileSource(sourceHelmRegistryConfig, f))
	}
	if f := dockerConfig(); f != "" && exists(f) {
		k = append(k, FileSource(sourceDockerConfig, f))
	}
	return k, nil
}

// helmRegistryConfig is where Helm keeps registry logins (helm registry login).
func helmRegistryConfig() string {
	if f := os.Getenv("HELM_REGISTRY_CONFIG"); f != "" {
		return f
	}
	return helmpath.ConfigPath("registry", "config.json")
}

// dockerConfig is the Docker config file docker and go-containerregistry read.
func dockerConfig() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
