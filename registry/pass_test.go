package registry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/registry/registrytest"
	"github.com/driverguard/driverguard/routing"
)

// passCluster is nodes nodes and drivers RBLNDrivers whose images live in reg, every driver
// pulling with the Secret npu/drivercred: the default driver and instances each selecting a
// group of nodes, ten driver versions, three families, two OS releases, three kernels.
func passCluster(reg *registrytest.Registry, nodes, drivers int) ([]v1alpha1.RBLNDriver, *routing.Result) {
	families := []string{"atom", "rebel", "atom-max"}
	oses := [][2]string{{"ubuntu", "22.04"}, {"ubuntu", "24.04"}}
	kernels := []string{"6.8.0-90-generic", "6.8.0-94-generic", "5.15.0-1_custom+x"}
	ns := make([]routing.Node, nodes)
	for i := range ns {
		os := oses[i%len(oses)]
		ns[i] = routing.Node{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{
			operator.LabelDeployDriver: "true",
			operator.LabelFamily:       families[i%len(families)],
			operator.LabelOSID:         os[0], operator.LabelOSVersion: os[1],
			operator.LabelKernel: kernels[(i/7)%len(kernels)],
			"example.com/group":  fmt.Sprintf("g%d", i%(drivers+drivers/5)),
		}}
	}
	ds := make([]v1alpha1.RBLNDriver, drivers)
	for i := range ds {
		d := v1alpha1.RBLNDriver{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultDriverName}, Spec: v1alpha1.RBLNDriverSpec{
			Registry: reg.Host, Image: "rebellions/rbln-driver", Version: fmt.Sprintf("3.%d.0", i%10),
			ImagePullSecrets: []string{"drivercred"},
		}}
		if i > 0 {
			d.Name = fmt.Sprintf("rbln-driver-g%d", i)
			d.Spec.NodeSelector = map[string]string{"example.com/group": fmt.Sprintf("g%d", i)}
		}
		ds[i] = d
	}
	return ds, routing.Route(ds, ns, routing.Options{})
}

// TestCheckAsksEachImageOnce (README.md "Private registries": each distinct image once): one image pass at 10,000 nodes × 500 drivers,
// every driver naming the same pull Secret, asks the registry for each distinct image once,
// pings it and fetches a token once per repository (the token's scope), and reads the Secret
// once.
func TestCheckAsksEachImageOnce(t *testing.T) {
	t.Parallel()
	reg := registrytest.New(t, "robot", "s3cret-pa55", true)
	drivers, res := passCluster(reg, 10_000, 500)
	images := Images(res)
	require.Greater(t, len(images), 50)
	require.Greater(t, len(res.Pools), 5*len(images), "many pools share an image")
	published := 0
	for i, img := range images {
		if i%4 == 0 {
			reg.Push(t, strings.TrimPrefix(img, reg.Host+"/"))
			published++
		}
	}
	reads := &countingReader{Reader: fake.NewClientBuilder().WithObjects(pullSecret("drivercred", reg.Host, "robot", "s3cret-pa55", false)).Build()}
	pushTokens, _ := reg.Counts("token ")
	pings := reg.Pings()

	keys := PullSecrets(t.Context(), reads, "npu", SecretsOf(drivers), res)
	results := NewChecker(Options{Timeout: 30 * time.Second}).Check(t.Context(), images, keys)

	assert.Equal(t, 1, reads.gets, "the Secret is read once")
	sum := Summarize(images, results)
	assert.Equal(t, Summary{Checked: true, Images: len(images), Found: published, Missing: len(images) - published, NotVerifiedBy: map[Reason]int{}}, sum)
	heads, paths := reg.Counts("head ")
	assert.Equal(t, len(images), paths, "every image asked")
	assert.Equal(t, int32(len(images))+int32(published), heads, "each asked once (a push HEADs too)")
	tokens, _ := reg.Counts("token ")
	repos := map[string]bool{}
	for _, img := range images {
		repo, _, _ := strings.Cut(strings.TrimPrefix(img, reg.Host+"/"), ":")
		repos[repo] = true
		assert.Equal(t, []string{"Secret npu/drivercred"}, results[img].Credentials)
	}
	assert.Len(t, repos, 3, "one repository per family")
	assert.Equal(t, int32(len(repos)), tokens-pushTokens, "one token per repository (scope) and pass")
	assert.Equal(t, int32(len(repos)), reg.Pings()-pings, "one ping per repository and pass")
	for repo := range repos {
		assert.GreaterOrEqual(t, reg.Counted("token repository:"+repo+":pull"), int32(1), repo)
	}
}

// BenchmarkCheckPass: one image pass at 10,000 nodes × 500 drivers against a registry that
// wants a token; it reports the registry's requests per pass.
func BenchmarkCheckPass(b *testing.B) {
	reg := registrytest.New(b, "robot", "s3cret-pa55", true)
	drivers, res := passCluster(reg, 10_000, 500)
	images := Images(res)
	for i, img := range images {
		if i%4 == 0 {
			reg.Push(b, strings.TrimPrefix(img, reg.Host+"/"))
		}
	}
	c := fake.NewClientBuilder().WithObjects(pullSecret("drivercred", reg.Host, "robot", "s3cret-pa55", false)).Build()
	checker := NewChecker(Options{Timeout: 30 * time.Second})
	heads0, _ := reg.Counts("head ")
	tokens0, _ := reg.Counts("token ")
	pings0 := reg.Pings()
	b.ReportAllocs()
	for b.Loop() {
		_ = checker.Check(b.Context(), images, PullSecrets(b.Context(), c, "npu", SecretsOf(drivers), res))
	}
	heads, _ := reg.Counts("head ")
	tokens, _ := reg.Counts("token ")
	n := float64(b.N)
	b.ReportMetric(float64(len(images)), "images")
	b.ReportMetric(float64(heads-heads0)/n, "heads/pass")
	b.ReportMetric(float64(tokens-tokens0)/n, "tokens/pass")
	b.ReportMetric(float64(reg.Pings()-pings0)/n, "pings/pass")
}

// countingReader counts the Gets that reach the Reader.
type countingReader struct {
	client.Reader
	mu   sync.Mutex
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}
