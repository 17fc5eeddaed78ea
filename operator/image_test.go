package operator_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/operator"
)

func TestDriverImage(t *testing.T) {
	ubuntu := operator.Pool{Name: "atom-ubuntu22.04-6.8.0-90-generic", Family: "atom", OSID: "ubuntu", OSVersion: "22.04", Kernel: "6.8.0-90-generic"}
	rhel := operator.Pool{Family: "rebel100", OSID: "rhel", OSVersion: "9.4", Kernel: "5.14.0-427.13.1.el9_4.x86_64"}
	for _, tc := range []struct {
		name    string
		spec    operator.DriverSpec
		pool    operator.Pool
		want    string
		problem operator.ImageProblem
	}{
		{name: "org and name", spec: operator.DriverSpec{"repo.rebellions.ai", "rebellions/rbln-driver", "3.2.2"}, pool: ubuntu,
			want: "repo.rebellions.ai/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "raw kernel in the tag", spec: operator.DriverSpec{"repo.rebellions.ai", "rebellions/rbln-driver", "3.2.2"}, pool: rhel,
			want: "repo.rebellions.ai/rebellions/rebel100/rbln-driver:3.2.2-5.14.0-427.13.1.el9_4.x86_64-rhel9.4"},
		{name: "one segment", spec: operator.DriverSpec{"r.example", "rbln-driver", "3.2.2"}, pool: ubuntu,
			want: "r.example/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "three segments", spec: operator.DriverSpec{"r.example:5000", "a/b/rbln-driver", "3.2.2"}, pool: ubuntu,
			want: "r.example:5000/a/b/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "spaces and slashes trimmed", spec: operator.DriverSpec{" r.example/ ", " /rebellions/rbln-driver/ ", " 3.2.2 "}, pool: ubuntu,
			want: "r.example/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "empty registry is kept", spec: operator.DriverSpec{"", "rebellions/rbln-driver", "3.2.2"}, pool: ubuntu,
			want: "/rebellions/atom/rbln-driver:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "a bare @ is not refused", spec: operator.DriverSpec{"r", "rebellions/rbln-driver@x", "3.2.2"}, pool: ubuntu,
			want: "r/rebellions/atom/rbln-driver@x:3.2.2-6.8.0-90-generic-ubuntu22.04"},
		{name: "digest in image", spec: operator.DriverSpec{"r", "rebellions/rbln-driver@sha256:abcd", "3.2.2"}, pool: ubuntu, problem: operator.ImageDigest},
		{name: "digest in version", spec: operator.DriverSpec{"r", "rebellions/rbln-driver", "sha256:abcd"}, pool: ubuntu, problem: operator.ImageDigest},
		{name: "no image", spec: operator.DriverSpec{"r", " / ", "3.2.2"}, pool: ubuntu, problem: operator.ImageNoImage},
		{name: "no version", spec: operator.DriverSpec{"r", "rebellions/rbln-driver", "  "}, pool: ubuntu, problem: operator.ImageNoVersion},
		{name: "no family", spec: operator.DriverSpec{"r", "rebellions/rbln-driver", "3.2.2"}, pool: operator.Pool{OSID: "ubuntu", Kernel: "6.8.0"}, problem: operator.ImageNoFamily},
		{name: "no kernel", spec: operator.DriverSpec{"r", "rebellions/rbln-driver", "3.2.2"}, pool: operator.Pool{Family: "atom", OSID: "ubuntu"}, problem: operator.ImageNoOSOrKernel},
		{name: "no OS", spec: operator.DriverSpec{"r", "rebellions/rbln-driver", "3.2.2"}, pool: operator.Pool{Family: "atom", Kernel: "6.8.0"}, problem: operator.ImageNoOSOrKernel},
		{name: "an OS version alone is an OS", spec: operator.DriverSpec{"r", "rbln-driver", "3.2.2"}, pool: operator.Pool{Family: "atom", OSVersion: "22.04", Kernel: "6.8.0"},
			want: "r/atom/rbln-driver:3.2.2-6.8.0-22.04"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := operator.DriverImage(tc.spec, tc.pool)
			if tc.problem != 0 {
				var ie *operator.ImageError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, tc.problem, ie.Problem)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, ref.String())
		})
	}
}

func TestDigestMessageSaysWhy(t *testing.T) {
	_, err := operator.DriverImage(operator.DriverSpec{"r", "rbln-driver", "sha256:0"}, operator.Pool{Family: "atom", OSID: "ubuntu", Kernel: "6.8.0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot build a driver image from a digest")
	assert.Contains(t, err.Error(), "specifying image digest is not supported when precompiled is enabled")
}

func TestReferenceAndSMDImage(t *testing.T) {
	assert.Equal(t, "docker.io/rebellions/rbln-smd:3.2.2", operator.Reference(" docker.io/", "/rebellions/rbln-smd", "3.2.2").String())
	assert.Equal(t, "docker.io/rebellions/rbln-k8s-driver-manager:latest", operator.Reference("docker.io", "rebellions/rbln-k8s-driver-manager", "").String())
	d := operator.Reference("r", "m", "@sha256:abc")
	assert.Equal(t, "r/m@sha256:abc", d.String())
	assert.Equal(t, "IfNotPresent", operator.ReferencePullPolicy("IfNotPresent", d))
	assert.Equal(t, "Always", operator.ReferencePullPolicy("IfNotPresent", operator.Reference("r", "m", "")))

	ref, ok := operator.SMDImage("repo.rebellions.ai", "rebellions/rbln-smd", " 3.2.2 ")
	require.True(t, ok)
	assert.Equal(t, "repo.rebellions.ai/rebellions/rbln-smd:3.2.2", ref.String())
	_, ok = operator.SMDImage("repo.rebellions.ai", "rebellions/rbln-smd", " ")
	assert.False(t, ok, "an empty version leaves the RSMD DaemonSet as it is")
}

func TestDriverPullPolicy(t *testing.T) {
	assert.Equal(t, "IfNotPresent", operator.DriverPullPolicy("", "3.2.2"))
	assert.Equal(t, "Never", operator.DriverPullPolicy("Never", "3.2.2"))
	assert.Equal(t, "Always", operator.DriverPullPolicy("IfNotPresent", "latest"))
	assert.Equal(t, "IfNotPresent", operator.DriverPullPolicy("", " latest"), "the raw version is compared")
}
