package charts_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestKubernetesFloorStatedOnce (#46): the lowest Kubernetes the README supports is the floor
// of Chart.yaml's kubeVersion, so Helm refuses to install where driverguard is not supported.
func TestKubernetesFloorStatedOnce(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`Supported Kubernetes: \*\*1\.(\d+) or newer\*\*`).FindSubmatch(readme)
	require.NotNil(t, m, "the README states the supported Kubernetes as \"Supported Kubernetes: **1.N or newer**\"")

	raw, err := os.ReadFile("driverguard/Chart.yaml")
	require.NoError(t, err)
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &chart))
	require.Equal(t, ">=1."+string(m[1])+".0-0", chart.KubeVersion,
		"Chart.yaml's kubeVersion floor is the README's (the -0 admits providers' pre-release suffixes such as v1.N.3-eks-...)")
}
