package charts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestArtifactHubAnnotations (#46): Chart.yaml's Artifact Hub metadata says what the chart is:
// artifacthub.io/crds lists exactly the CRDs in crds/ (kind, served version, name), every
// artifacthub.io/crdsExamples object is of one of them, artifacthub.io/images is the default
// webhook image (make release rewrites it to the image it pushes), and artifacthub.io/license
// is the repository's LICENSE.
func TestArtifactHubAnnotations(t *testing.T) {
	raw, err := os.ReadFile("driverguard/Chart.yaml")
	require.NoError(t, err)
	var chart struct {
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &chart))
	ann := chart.Annotations

	type crd struct{ Kind, Version, Name, DisplayName, Description string }
	var listed []crd
	require.NoError(t, yaml.Unmarshal([]byte(ann["artifacthub.io/crds"]), &listed), "artifacthub.io/crds")
	files, err := filepath.Glob("driverguard/crds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var shipped []crd
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var c apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(data, &c), f)
		for _, v := range c.Spec.Versions {
			if v.Served {
				shipped = append(shipped, crd{Kind: c.Spec.Names.Kind, Version: v.Name, Name: c.Name})
				kinds[c.Spec.Group+"/"+v.Name+" "+c.Spec.Names.Kind] = true
			}
		}
	}
	var got []crd
	for _, c := range listed {
		assert.NotEmpty(t, c.DisplayName, "%s: displayName", c.Kind)
		assert.NotEmpty(t, c.Description, "%s: description", c.Kind)
		got = append(got, crd{Kind: c.Kind, Version: c.Version, Name: c.Name})
	}
	assert.ElementsMatch(t, shipped, got, "artifacthub.io/crds lists the CRDs of crds/")

	var examples []struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(ann["artifacthub.io/crdsExamples"]), &examples), "artifacthub.io/crdsExamples")
	require.NotEmpty(t, examples)
	for _, e := range examples {
		assert.True(t, kinds[e.APIVersion+" "+e.Kind], "the example %s %s is of a CRD the chart ships", e.APIVersion, e.Kind)
		assert.NotEmpty(t, e.Metadata["name"], "the example %s has a name", e.Kind)
	}

	var images []struct {
		Name, Image string
		Platforms   []string
	}
	require.NoError(t, yaml.Unmarshal([]byte(ann["artifacthub.io/images"]), &images), "artifacthub.io/images")
	require.Len(t, images, 1)
	values, err := os.ReadFile("driverguard/values.yaml")
	require.NoError(t, err)
	var v struct {
		Webhook struct {
			Image struct{ Registry, Repository, Tag string } `json:"image"`
		} `json:"webhook"`
	}
	require.NoError(t, yaml.Unmarshal(values, &v))
	img := v.Webhook.Image
	assert.Empty(t, img.Registry+img.Tag, "the default webhook image is repository:appVersion")
	assert.Equal(t, img.Repository+":"+chart.AppVersion, images[0].Image, "artifacthub.io/images is the default webhook image")
	assert.ElementsMatch(t, []string{"linux/amd64", "linux/arm64"}, images[0].Platforms, "the platforms make image builds")

	license, err := os.ReadFile("../LICENSE")
	require.NoError(t, err)
	require.Equal(t, "Apache-2.0", ann["artifacthub.io/license"])
	assert.True(t, strings.Contains(string(license), "Apache License") && strings.Contains(string(license), "Version 2.0, January 2004"),
		"LICENSE is the Apache License 2.0 that artifacthub.io/license names")
}
