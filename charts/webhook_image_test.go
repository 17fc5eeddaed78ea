package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
)

// TestWebhookImage: the webhook Deployment's image is registry/repository:tag, or
// repository:tag with an empty registry. The default is the reference `make image` records in
// its layout (driverguard/driverguard:<appVersion>; test/image checks that side).
func TestWebhookImage(t *testing.T) {
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	appVersion := ch.AppVersion()
	require.NotEmpty(t, appVersion)

	tests := map[string]struct {
		image map[string]any
		want  string
	}{
		"default":           {nil, "driverguard/driverguard:" + appVersion},
		"registry":          {map[string]any{"registry": "registry.invalid"}, "registry.invalid/driverguard/driverguard:" + appVersion},
		"registry and port": {map[string]any{"registry": "registry.invalid:5000", "repository": "team/dg", "tag": "1.2.3"}, "registry.invalid:5000/team/dg:1.2.3"},
		"tag only":          {map[string]any{"tag": "0.2.0-rc.1"}, "driverguard/driverguard:0.2.0-rc.1"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{}
			if tt.image != nil {
				vals["webhook"] = map[string]any{"image": tt.image}
			}
			assert.Equal(t, tt.want, webhookImage(t, vals))
		})
	}
}

// TestWebhookImageRegistryPattern: webhook.image.registry is the shared registry pattern or
// empty.
func TestWebhookImageRegistryPattern(t *testing.T) {
	data, err := charts.FS.ReadFile(charts.ChartDir + "/values.schema.json")
	require.NoError(t, err)
	var schema struct {
		Properties struct {
			Webhook struct {
				Properties struct {
					Image struct {
						Properties struct {
							Registry struct {
								Pattern string `json:"pattern"`
							} `json:"registry"`
						} `json:"properties"`
					} `json:"image"`
				} `json:"properties"`
			} `json:"webhook"`
		} `json:"properties"`
	}
	require.NoError(t, yaml.Unmarshal(data, &schema))
	inner := strings.TrimSuffix(strings.TrimPrefix(validation.RegistryPattern, "^"), "$")
	assert.Equal(t, "^$|^("+inner+")$", schema.Properties.Webhook.Properties.Image.Properties.Registry.Pattern)
}

// webhookImage renders the chart with helm's install action (client-only, in-process) and
// returns the webhook container's image.
func webhookImage(t *testing.T, vals map[string]any) string {
	t.Helper()
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "dg", "default"
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
	rel, err := inst.Run(ch, vals)
	require.NoError(t, err)

	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(rel.Manifest))))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		if meta.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		require.NoError(t, yaml.Unmarshal(doc, &d))
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "webhook" {
				return c.Image
			}
		}
	}
	t.Fatal("no webhook Deployment with a webhook container rendered")
	return ""
}
