package routing

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// pl is a pool of family, OS and kernel (what operator.PoolOf composes from a node's labels).
func pl(family, id, version, kernel string) operator.Pool {
	return operator.Pool{Family: family, OSID: id, OSVersion: version, Kernel: kernel}
}

func TestDriverImage(t *testing.T) {
	t.Parallel()
	ubuntu := pl("atom", "ubuntu", "22.04", atomKernel)
	tests := []struct {
		name     string
		registry string
		image    string
		version  string
		pool     operator.Pool
		want     string
		problem  string // non-empty: an *ImageError mentioning this
	}{
		{name: "two segments (the documented example)", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "3.2.2", pool: ubuntu,
			want: "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "one segment", registry: "repo.rebellions.ai", image: "rbln-driver", version: "3.2.2", pool: ubuntu,
			want: "repo.rebellions.ai/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "three segments", registry: "registry.example.com:5000", image: "mirror/rebellions/rbln-driver", version: "3.3.0-rc1", pool: ubuntu,
			want: "registry.example.com:5000/mirror/rebellions/atom/rbln-driver:3.3.0-rc1-6.8.0-90-generic-ubuntu22.04"},
		{name: "rhel kernel is used raw", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "3.2.2", pool: pl("rebel", "rhel", "9.2", rhelKernel),
			want: "repo.rebellions.ai/rebellions/rebel/rbln-driver:3.2.2-5.14.0-284.11.1.el9_2.x86_64-rhel9.2"},
		{name: "uppercase kernel is a valid tag", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "3.2.2", pool: pl("atom", "ubuntu", "22.04", awsKernel),
			want: "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-1015-AWS-ubuntu22.04"},
		{name: "kernel with '+' is reported, not mangled", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "3.2.2", pool: pl("atom", "debian", "12", rpiKernel),
			problem: `tag "3.2.2-6.1.0+rpt-rpi-v8-debian12"`},
		{name: "an uppercase image segment is not a repository path component", registry: "repo.rebellions.ai", image: "Rebellions/rbln-driver", version: "3.2.2", pool: ubuntu,
			problem: `component "Rebellions"`},
		{name: "spaces and slashes are trimmed as the operator trims them", registry: " repo.rebellions.ai/ ", image: " /rebellions/rbln-driver/ ", version: " 3.2.2 ", pool: ubuntu,
			want: "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "tag longer than 128 characters", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "3.2.2", pool: pl("atom", "ubuntu", "22.04", strings.Repeat("k", 120)),
			problem: "not a valid OCI tag"},
		{name: "empty path segment", registry: "repo.rebellions.ai", image: "rebellions//rbln-driver", version: "3.2.2", pool: ubuntu,
			problem: `component ""`},
		{name: "a leading slash is trimmed", registry: "repo.rebellions.ai", image: "/rbln-driver", version: "3.2.2", pool: ubuntu,
			want: "repo.rebellions.ai/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "empty registry", registry: "", image: "rebellions/rbln-driver", version: "3.2.2", pool: ubuntu,
			problem: "registry is empty"},
		{name: "a digest in the image: the operator refuses it", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver@sha256:0123", version: "3.2.2", pool: ubuntu,
			problem: "cannot build a driver image from a digest"},
		{name: "sha256: in the version: the operator refuses it", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "sha256:0123", pool: ubuntu,
			problem: "cannot build a driver image from a digest"},
		{name: "no version", registry: "repo.rebellions.ai", image: "rebellions/rbln-driver", version: "", pool: ubuntu,
			problem: "driver version is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := &v1alpha1.RBLNDriverSpec{Registry: tt.registry, Image: tt.image, Version: tt.version}
			got, err := DriverImage(spec, tt.pool)
			if tt.problem == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			assert.Empty(t, got)
			assert.Contains(t, err.Error(), tt.problem)
			var ie *ImageError
			if errors.As(err, &ie) {
				assert.NotEmpty(t, ie.Image, "the attempted path is named")
				return
			}
			var oe *operator.ImageError
			require.ErrorAs(t, err, &oe, "an image error is the operator's or a reference problem")
		})
	}
}

func TestSMDImage(t *testing.T) {
	t.Parallel()
	spec := drv("rbln-driver", nil).Spec
	got, err := SMDImage(&spec)
	require.NoError(t, err)
	assert.Equal(t, "repo.rebellions.ai/rebellions/rbln-smd:3.2.2", got)

	spec.Version = " "
	_, err = SMDImage(&spec)
	require.ErrorContains(t, err, "leaves the RSMD DaemonSet as it is")

	spec.SMD = nil
	_, err = SMDImage(&spec)
	require.Error(t, err)
}

func TestValidPathComponent(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"a": true, "atom": true, "rbln-driver": true, "a--b": true, "a_b": true, "a__b": true, "a.b": true, "a0": true,
		"": false, "A": false, "a___b": false, "a..b": false, "-a": false, "a-": false, "a_": false, ".a": false, "a+b": false, "a/b": false,
	} {
		assert.Equal(t, ok, validPathComponent(s), "%q", s)
	}
}
