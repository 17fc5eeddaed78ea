package crd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/test/controlplane"
)

// The suite's API server: the project's CRDs, and no webhook (docs/webhook.md "With the webhook away").
var suite struct {
	env      *envtest.Environment
	cfg      *rest.Config
	c        client.Client
	root     string
	setupErr error
}

func TestMain(m *testing.M) {
	suite.setupErr = setup()
	code := m.Run()
	if suite.env != nil {
		if err := suite.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

func setup() error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	suite.root = root
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return fmt.Errorf("%w in %s: run make tools", controlplane.ErrNoAssets, assets)
		}
	}
	suite.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if suite.cfg, err = suite.env.Start(); err != nil {
		return err
	}
	if _, err := controlplane.ReportVersion(suite.cfg); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	suite.c, err = client.New(suite.cfg, client.Options{Scheme: scheme})
	return err
}

func requireSetup(t *testing.T) {
	t.Helper()
	controlplane.RequireSetup(t, suite.setupErr)
}

// served is what the API server says of creating obj (a dry run): nil when it would store it,
// the refusal otherwise. Anything but a 422 Invalid fails the test: the CRD judged nothing.
func served(t *testing.T, obj client.Object) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	err := suite.c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
	if err != nil && !apierrors.IsInvalid(err) {
		var st apierrors.APIStatus
		if errors.As(err, &st) && st.Status().Reason == "RequestEntityTooLarge" {
			return err
		}
		t.Fatalf("creating %s: not a verdict of the CRD: %v", obj.GetName(), err)
	}
	return err
}
