package registry

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/routing"
)

// DriverSecrets are the spec.imagePullSecrets of drivers, by driver name.
type DriverSecrets map[string][]string

// SecretsOf are the pull Secrets of drivers.
func SecretsOf[D v1alpha1.RBLNDriver | *v1alpha1.RBLNDriver](drivers []D) DriverSecrets {
	out := make(DriverSecrets, len(drivers))
	for i := range drivers {
		var d *v1alpha1.RBLNDriver
		switch v := any(&drivers[i]).(type) {
		case *v1alpha1.RBLNDriver:
			d = v
		case **v1alpha1.RBLNDriver:
			d = *v
		}
		if d != nil {
			out[d.Name] = d.Spec.ImagePullSecrets
		}
	}
	return out
}

// PullSecrets gives each image of res the keyring the kubelet would pull it with (README.md "Private registries"):
// the spec.imagePullSecrets of the drivers whose pools or RSMD DaemonSets pull it, in driver
// order, each Secret once, read from namespace (where the driver DaemonSets run) with r. Each
// Secret is read once, now: a Secret rotated later is read by the next check. A Secret that
// cannot be read is a Source that says why, never an error: the images it was for are then
// asked with the other credentials, or anonymously, and their warnings name it.
func PullSecrets(ctx context.Context, r client.Reader, namespace string, secretsOf DriverSecrets, res *routing.Result) Keys {
	byImage := map[string][]string{}
	add := func(image, driver string) {
		if image == "" {
			return
		}
		for _, s := range secretsOf[driver] {
			if s != "" && !slices.Contains(byImage[image], s) {
				byImage[image] = append(byImage[image], s)
			}
		}
	}
	for _, p := range res.Pools {
		add(p.Image, p.Owner)
	}
	for _, s := range res.SMD {
		add(s.Image, s.Resource)
	}
	read := map[string]Source{}
	for _, names := range byImage {
		for _, n := range names {
			if _, ok := read[n]; !ok {
				read[n] = readSecret(ctx, r, namespace, n)
			}
		}
	}
	return func(image string) Keyring {
		var k Keyring
		for _, n := range byImage[image] {
			k = append(k, read[n])
		}
		return k
	}
}

func readSecret(ctx context.Context, r client.Reader, namespace, name string) Source {
	var s corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
	switch {
	case err == nil:
		return SecretSource(&s)
	case apierrors.IsNotFound(err):
		return MissingSecret(namespace, name, fmt.Errorf("not found in namespace %s (the driver DaemonSets' namespace: --pull-secret-namespace)", namespace))
	case apierrors.IsForbidden(err):
		return MissingSecret(namespace, name, fmt.Errorf("driverguard may not read it: grant get on Secrets in namespace %s (the chart's pull-secret Role does)", namespace))
	}
	return MissingSecret(namespace, name, fmt.Errorf("reading it: %w", err))
}
