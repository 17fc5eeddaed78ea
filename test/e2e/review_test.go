package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestReviewMatchesServedWebhook: for every shared request (test/testdata/review), the served
// webhook — with the cluster state created in the API server and read through its informer
// caches — and `driverguard review` — with the same state read from files — give the same
// response, and that response is the expected one.
func TestReviewMatchesServedWebhook(t *testing.T) {
	c, _ := newClient(t)
	dir := filepath.Join(suite.root, "test", "testdata", "review")
	resetCluster(t, c)
	t.Cleanup(func() { resetCluster(t, c) })

	// The same objects as the files.
	var created [3]int
	for i, f := range []string{"drivers.yaml", "nodes.yaml", "cluster-policy.yaml"} {
		docs, err := decode.File(filepath.Join(dir, f), nil)
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			ds, err := decode.Drivers(docs)
			if err != nil {
				t.Fatal(err)
			}
			for j := range ds {
				create(t, c, &ds[j])
			}
			created[i] = len(ds)
		case 1:
			ns, err := decode.Nodes(docs)
			if err != nil {
				t.Fatal(err)
			}
			for j := range ns {
				create(t, c, &ns[j])
			}
			created[i] = len(ns)
		case 2:
			cps, err := decode.ClusterPolicies(docs)
			if err != nil {
				t.Fatal(err)
			}
			for j := range cps {
				create(t, c, &cps[j])
			}
		}
	}
	waitForView(t, created[1], created[0])

	cases, err := wt.ReviewCases(dir)
	if err != nil {
		t.Fatal(err)
	}
	httpc := webhookClient(t)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			body, err := os.ReadFile(tc.File)
			if err != nil {
				t.Fatal(err)
			}
			var in admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatal(err)
			}
			served := postReview(t, httpc, webhook.PathFor(in.Request.Kind.Group, in.Request.Kind.Kind), body)

			var out, errOut bytes.Buffer
			code := app.Run(context.Background(), app.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errOut}, []string{"review", "-f", tc.File,
				"--drivers", filepath.Join(dir, "drivers.yaml"), "--nodes", filepath.Join(dir, "nodes.yaml"), "--cluster-policy", filepath.Join(dir, "cluster-policy.yaml")})
			var offline admissionv1.AdmissionReview
			if err := json.Unmarshal(out.Bytes(), &offline); err != nil {
				t.Fatalf("review (exit %d): %v\n%s", code, err, errOut.String())
			}

			if err := tc.Expect.Check(served.Response); err != nil {
				t.Errorf("served webhook: %v", err)
			}
			if err := tc.Expect.Offline().Check(offline.Response); err != nil {
				t.Errorf("driverguard review: %v", err)
			}
			if tc.Expect.APIServer != nil {
				return // the API server refuses it first: review says so, the webhook never sees it
			}
			if !equality.Semantic.DeepEqual(served.Response, offline.Response) {
				s, _ := json.MarshalIndent(served.Response, "", "  ")
				o, _ := json.MarshalIndent(offline.Response, "", "  ")
				t.Errorf("served and offline answers differ:\nserved:  %s\noffline: %s", s, o)
			}
		})
	}
}

// webhookClient trusts the serving certificate envtest generated for the webhook.
func webhookClient(t *testing.T) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(suite.env.WebhookInstallOptions.LocalServingCAData) {
		t.Fatal("no CA for the webhook")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func webhookURL(path string) string {
	wio := suite.env.WebhookInstallOptions
	return "https://" + net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)) + path
}

func postReview(t *testing.T, c *http.Client, path string, body []byte) *admissionv1.AdmissionReview {
	t.Helper()
	resp, err := c.Post(webhookURL(path), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil {
		t.Fatal(fmt.Errorf("no response"))
	}
	return &out
}
