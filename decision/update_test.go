package decision

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIntroduced: the one split of what an update introduces from what the stored object
// already had, in the order of now; on CREATE (nothing stored) everything is introduced.
func TestIntroduced(t *testing.T) {
	t.Parallel()
	key := strings.ToLower
	intro, kept := introduced([]string{"A", "b", "C", "d"}, key, keysOf([]string{"c", "a", "x"}, key))
	assert.Equal(t, []string{"b", "d"}, intro)
	assert.Equal(t, []string{"A", "C"}, kept)

	intro, kept = introduced([]string{"a"}, key, keysOf[string, string](nil, key))
	assert.Equal(t, []string{"a"}, intro)
	assert.Empty(t, kept)
}
