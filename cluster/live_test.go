package cluster_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/driverguard/driverguard/cluster"
)

// TestReadLiveRefused (#30): an API server that answers 401 or 403 refused the reader; the
// error says the status (client-go's discovery reads it as "unknown") and stays the API
// status it was.
func TestReadLiveRefused(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no","code":%d}`, code)
			}))
			t.Cleanup(srv.Close)
			_, err := cluster.ReadLive(t.Context(), &rest.Config{Host: srv.URL}, cluster.LiveOptions{})
			var refused *cluster.RefusedError
			require.ErrorAs(t, err, &refused)
			assert.Equal(t, code, refused.Code)
			assert.ErrorContains(t, err, fmt.Sprintf("listing RBLNDrivers: the API server answered %d %s: ", code, http.StatusText(code)))
			assert.True(t, apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err), "still the API status")
		})
	}
	// A cluster that does not answer is not a refusal.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	_, err := cluster.ReadLive(t.Context(), &rest.Config{Host: srv.URL}, cluster.LiveOptions{})
	require.Error(t, err)
	var refused *cluster.RefusedError
	assert.False(t, errors.As(err, &refused))
}
