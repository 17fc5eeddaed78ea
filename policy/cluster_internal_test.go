package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoutesArePruned (#45): the owner and pool pairs the node entries share are forgotten
// once no node has them: a node whose owner changes again and again (driver churn) leaves
// no trail.
func TestRoutesArePruned(t *testing.T) {
	c := newClusterData()
	labels := map[string]string{"a": "b"}
	for i := range 10_000 {
		c.setNode(ClusterNode{Name: "n1", Labels: labels, Owner: fmt.Sprintf("rbln-driver-ci-%d", i), Pool: "p"})
	}
	_, err := c.sync(&ClusterView{Nodes: []ClusterNode{{Name: "n1", Labels: labels, Owner: "rbln-driver", Pool: "p"}}})
	require.NoError(t, err)
	assert.Len(t, c.routes, 1)
	_, err = c.sync(&ClusterView{})
	require.NoError(t, err)
	assert.Empty(t, c.nodes)
	assert.LessOrEqual(t, len(c.routes), 64)
}
