package action

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderedObjects(t *testing.T) {
	in := `apiVersion: rebellions.ai/v1alpha1
kind: RBLNClusterPolicy
metadata:
  name: rbln-cluster-policy
  annotations:
    postrenderer.helm.sh/postrender-filename: driverguard/templates/rblnclusterpolicy.yaml
  labels:
    app.kubernetes.io/instance: prod
---
apiVersion: rebellions.ai/v1alpha1
kind: RBLNDriver
metadata:
  name: rbln-driver
  annotations:
    postrenderer.helm.sh/postrender-filename: driverguard/templates/rblndrivers.yaml
    team: npu
  labels:
    app.kubernetes.io/instance: prod
spec:
  version: "3.2.2"
---
apiVersion: rebellions.ai/v1alpha1
kind: RBLNDriver
metadata:
  name: rbln-driver-a
  annotations:
    postrenderer.helm.sh/postrender-filename: driverguard/templates/rblndrivers.yaml
spec:
  version: "3.3.0"
---
apiVersion: v1
kind: Service
metadata:
  name: svc
`
	objs, err := renderedObjects([]byte(in), "the rendered manifests")
	require.NoError(t, err)
	require.NotNil(t, objs.ClusterPolicy)
	assert.Nil(t, objs.ClusterPolicy.Annotations, "Helm 4's annotation never reaches the cluster")
	require.Len(t, objs.Drivers, 2)
	assert.Equal(t, "rbln-driver", objs.Drivers[0].Name, "Helm's order is kept")
	assert.Equal(t, map[string]string{"team": "npu"}, objs.Drivers[0].Annotations)
	assert.Nil(t, objs.Drivers[1].Annotations)
	assert.Equal(t, "prod", releaseNameOf(objs))
}
