package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
)

// RegistryCheck is how a job asks the registries (README.md "Private registries"): --check-images and the flags that
// say with which credentials.
type RegistryCheck struct {
	// CheckImages asks the registry for every image the job composes.
	CheckImages  bool
	ImageTimeout time.Duration
	// RegistryConfig is --registry-config: a Docker-config-format file of credentials, used
	// instead of Helm's registry config when the cluster is read from files.
	RegistryConfig string
	// InsecureRegistries may be asked over plain HTTP (--insecure-registry).
	InsecureRegistries []string
	// PullSecretNamespace is where the drivers' pull Secrets are read when the cluster is read
	// live (--pull-secret-namespace; empty: the kubeconfig context's namespace).
	PullSecretNamespace string
}

// check refuses credential flags that would change nothing: without --check-images, a
// Secret namespace with files, a credentials file with the live cluster (whose credentials
// are the drivers' pull Secrets, as the kubelet's are).
func (c RegistryCheck) check(live bool) error {
	var given []string
	if c.RegistryConfig != "" {
		given = append(given, "--registry-config")
	}
	if len(c.InsecureRegistries) > 0 {
		given = append(given, "--insecure-registry")
	}
	if c.PullSecretNamespace != "" {
		given = append(given, "--pull-secret-namespace")
	}
	verb := "changes"
	if len(given) > 1 {
		verb = "change"
	}
	switch {
	case !c.CheckImages && len(given) > 0:
		return fmt.Errorf("%s only %s how images are checked: add --check-images", joinFlags(given), verb)
	case live && c.RegistryConfig != "":
		return errors.New("--registry-config is for a cluster read from files: read live, the credentials are each RBLNDriver's spec.imagePullSecrets, read from --pull-secret-namespace as the kubelet reads them")
	case !live && c.PullSecretNamespace != "":
		return errors.New("--pull-secret-namespace is where the drivers' pull Secrets are read in the live cluster (--live): with files, the credentials are --registry-config, Helm's registry config and the Docker config")
	}
	if err := ValidateInsecureRegistries(c.InsecureRegistries); err != nil {
		return err
	}
	if c.PullSecretNamespace != "" {
		if msgs := validation.IsDNS1123Label(c.PullSecretNamespace); len(msgs) > 0 {
			return fmt.Errorf("--pull-secret-namespace %q is not a namespace name: %s", truncateValue(c.PullSecretNamespace), strings.Join(msgs, "; "))
		}
	}
	return nil
}

// joinFlags: "--a", "--a and --b", "--a, --b and --c".
func joinFlags(flags []string) string {
	if len(flags) == 1 {
		return flags[0]
	}
	return strings.Join(flags[:len(flags)-1], ", ") + " and " + flags[len(flags)-1]
}

func (c RegistryCheck) options() registry.Options {
	return registry.Options{Timeout: c.ImageTimeout, InsecureRegistries: c.InsecureRegistries}
}

// imageCredentials are the credentials a job's image check uses: live, the drivers' pull
// Secrets in the pull Secret namespace of target's cluster; with files, the user's own.
type imageCredentials struct {
	keyring   registry.Keyring
	secrets   client.Reader
	namespace string
}

// credentials sets up where c's credentials come from, or nothing without --check-images: live,
// the pull Secrets in src's cluster; with files, the user's own keyring.
func (c RegistryCheck) credentials(src clusterSource) (*imageCredentials, error) {
	if !c.CheckImages {
		return nil, nil
	}
	if !src.live {
		k, err := registry.OfflineKeyring(c.RegistryConfig)
		if err != nil {
			return nil, err
		}
		return &imageCredentials{keyring: k}, nil
	}
	api := apiServerOf(src.target)
	cfg, err := api.restConfig("read pull Secrets from", "", 0)
	if err != nil {
		return nil, err
	}
	ns := c.PullSecretNamespace
	if ns == "" {
		ns = api.namespace()
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("a client to read pull Secrets: %w", err)
	}
	return &imageCredentials{secrets: cl, namespace: ns}, nil
}

// keys gives each image of res its keyring: the pull Secrets of the drivers that pull it
// (live), or the user's keyring.
func (ic *imageCredentials) keys(ctx context.Context, drivers registry.DriverSecrets, res *routing.Result) registry.Keys {
	if ic.secrets == nil {
		return registry.Fixed(ic.keyring)
	}
	return registry.PullSecrets(ctx, ic.secrets, ic.namespace, drivers, res)
}

// run asks the registries about images, which res composed for drivers.
func (c RegistryCheck) run(ctx context.Context, ic *imageCredentials, images []string, drivers registry.DriverSecrets, res *routing.Result) map[string]registry.ImageResult {
	return registry.NewChecker(c.options()).Check(ctx, images, ic.keys(ctx, drivers, res))
}

// ValidateInsecureRegistries checks --insecure-registry values (registry.ValidateInsecureRegistry).
func ValidateInsecureRegistries(hosts []string) error {
	for _, h := range hosts {
		if err := registry.ValidateInsecureRegistry(h); err != nil {
			return fmt.Errorf("--insecure-registry %q: %w", truncateValue(h), err)
		}
	}
	return nil
}
