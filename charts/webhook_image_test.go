package charts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
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

// webhookImage renders the chart (manifest) and returns the webhook container's image.
func webhookImage(t *testing.T, vals map[string]any) string {
	t.Helper()
	docs, _ := manifest(t, vals)
	for _, c := range one[appsv1.Deployment](t, docs, "Deployment").Spec.Template.Spec.Containers {
		if c.Name == "webhook" {
			return c.Image
		}
	}
	t.Fatal("no webhook Deployment with a webhook container rendered")
	return ""
}
