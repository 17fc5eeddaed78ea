package crd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestArtifactHubExamplesAreServed (#46): the objects Chart.yaml shows on Artifact Hub
// (artifacthub.io/crdsExamples) are what the CRDs accept on a real API server, so a user who
// copies one has a valid start.
func TestArtifactHubExamplesAreServed(t *testing.T) {
	requireSetup(t)
	raw, err := os.ReadFile(filepath.Join(suite.root, "charts", "driverguard", "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &chart))
	var examples []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(chart.Annotations["artifacthub.io/crdsExamples"]), &examples))
	require.NotEmpty(t, examples)
	for _, e := range examples {
		obj := &unstructured.Unstructured{Object: e}
		t.Run(obj.GetKind(), func(t *testing.T) {
			require.NoError(t, served(t, obj), "the example %s %s", obj.GetKind(), obj.GetName())
		})
	}
}
