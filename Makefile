# driverguard build entry points. `make test` is what CI runs (.ci/run).
GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt
HELM_CHART := charts/driverguard

# Keep in sync with test/generated/generated_test.go, which checks the committed output.
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
CRD_DIR := config/crd/bases
CHART_CRD_DIR := $(HELM_CHART)/crds

# helm, kube-apiserver, the disruption controller, etcd and kubectl from bin/ (built by hack/tools.sh) for the tests.
TEST_ENV = export PATH="$(CURDIR)/bin:$$PATH" KUBEBUILDER_ASSETS="$(CURDIR)/bin";

# Every Go file of the repository (what `gofmt -l .` would see, minus bin/ and .git/).
GO_FILES = $$(find . \( -path ./.git -o -path ./bin -o -name node_modules \) -prune -o -type f -name '*.go' -print)

.DEFAULT_GOAL := build
.PHONY: tools test-tools generate build demo test fuzz bench lint vet fmt-check plugin

tools: ## build helm, kube-apiserver, the disruption controller, etcd, kubectl and golangci-lint into bin/ (reused when current)
	bash hack/tools.sh all

test-tools: ## the tools the tests run: helm, helm4, kube-apiserver, the disruption controller, etcd, kubectl, chromium and mermaid
	bash hack/tools.sh helm control-plane kubectl browser

generate: ## deepcopy + CRDs with the object-local rules (config/crd/bases, copied into the chart's crds/ with openreports' ClusterReport CRD) + docs/rules.md
	rm -f $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt crd paths=./api/... output:crd:artifacts:config=$(CRD_DIR)
	@# the object-local rules of api/validation, as CRD limits and CEL rules (docs/webhook.md "With the webhook away")
	$(GO) run ./hack/crdrules $(CRD_DIR)
	mkdir -p $(CHART_CRD_DIR)
	rm -f $(CHART_CRD_DIR)/*.yaml
	cp $(CRD_DIR)/*.yaml $(CHART_CRD_DIR)/
	@# the audit's ClusterReport CRD, as the openreports module go.mod requires ships it
	cp "$$($(GO) list -m -f '{{.Dir}}' github.com/openreports/reports-api)/config/crd/openreports.io_clusterreports.yaml" $(CHART_CRD_DIR)/
	chmod 644 $(CHART_CRD_DIR)/*.yaml
	@# the rule table of the docs, from the rule registry (docs/rules.md)
	$(GO) run ./hack/ruletable > docs/rules.md

# Built as the image and make test build it (cgo off, -trimpath): a static binary, and `make
# demo` followed by `make test` (or the reverse) compiles each package once.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/driverguard ./cmd/driverguard

demo: build
	bin/driverguard preview -f examples/multi-driver.yaml --nodes examples/nodes.yaml

# The Helm plugins (README "Helm plugin"): per platform a Helm 4 CLI plugin, a Helm 4
# post-renderer plugin (driverguard-check) and the CLI plugin in Helm 3's format, as tarballs in
# dist/plugin with SHA256SUMS. VERSION (the chart's appVersion), PLATFORMS ("linux/amd64
# linux/arm64 darwin/arm64") and OUT come from the environment or the command line; SIGN_KEY
# (with SIGN_KEYRING, SIGN_PASSPHRASE_FILE) also writes Helm 4's signed packages and .prov files.
plugin: ## Helm plugin tarballs in dist/plugin: make plugin [VERSION=0.1.0] [PLATFORMS=linux/amd64] [SIGN_KEY=...]
	GO='$(GO)' bash hack/plugin.sh

vet:
	$(GO) vet ./...

fmt-check:
	@unformatted=$$($(GOFMT) -l $(GO_FILES) </dev/null) || { echo "gofmt failed (see above)" >&2; exit 1; }; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run: gofmt -w <file>):" >&2; \
		echo "$$unformatted" >&2; \
		exit 1; \
	fi

lint: vet fmt-check ## go vet, gofmt and golangci-lint (.golangci.yml)
	bash hack/tools.sh lint
	bin/golangci-lint run ./...

# One build configuration besides -race's: the driverguard binary the end-to-end tests run
# (DRIVERGUARD_BIN, built once here rather than by each test package) and the sustained-load
# test use the image's (cgo off, -trimpath), so they share every compiled package with the
# image and plugin builds of test/image and test/plugin. golangci-lint (go vet's analyzers
# included) is `make lint`, which CI runs after `make test`: its first run on a machine
# type-checks every dependency from source (~14 min on 2 cores), which a newcomer's first
# `make test` should not wait for.
TEST_BIN := bin/driverguard-test
NOCGO_BUILD = CGO_ENABLED=0 $(GO)
# go test starts packages in the order it is given them: the longest runs (mostly waiting on
# an API server or on helm processes) first, so they overlap the compiles of the rest instead of
# running alone at the end. The list only orders; ./... still selects every package.
LONG_TESTS := ./test/parity ./test/differential ./test/findings ./test/image ./test/plugin ./test/lifecycle ./test/docs

test: test-tools
	@$(MAKE) --no-print-directory fmt-check
	@if [ -f $(HELM_CHART)/Chart.yaml ]; then \
		echo "helm lint --strict $(HELM_CHART)"; \
		$(TEST_ENV) helm lint --strict $(HELM_CHART); \
	else \
		echo "skipping helm lint: $(HELM_CHART)/Chart.yaml does not exist"; \
	fi
	$(NOCGO_BUILD) build -trimpath -o $(TEST_BIN) ./cmd/driverguard
	@# the bundled library's suites, as a platform team's CI runs theirs
	$(TEST_BIN) test --min-coverage 100 policy/library/suites
	$(TEST_ENV) export DRIVERGUARD_BIN="$(CURDIR)/$(TEST_BIN)"; $(GO) test -race $(LONG_TESTS) ./... -count=1 -timeout 60m
	@# the sustained-load test is built without -race (the race detector would set its pace)
	$(TEST_ENV) $(NOCGO_BUILD) test -trimpath ./test/load/ -count=1 -timeout 10m -v -run TestSustainedLoad

# Every fuzz target (`func Fuzz...` in a _test.go file) for FUZZTIME each, one after another;
# a failing input fails the run and is written to <package>/testdata/fuzz/<Target>/ (commit it
# with its fix as a regression seed). `go test` (make test) runs the seed corpora only.
FUZZTIME ?= 30s
FUZZPARALLEL ?=
fuzz: ## every fuzz target for FUZZTIME (30s) each: make fuzz FUZZTIME=5m FUZZPARALLEL=1
	FUZZTIME='$(FUZZTIME)' FUZZPARALLEL='$(FUZZPARALLEL)' FUZZ='$(FUZZ)' GO='$(GO)' bash hack/fuzz.sh

bench:
	@if [ -f hack/bench.sh ]; then bash hack/bench.sh; else echo "hack/bench.sh does not exist yet" >&2; fi

# The scale benchmark of issue #45 (docs/development.md "Scale benchmark"), not part of make test:
# NODES fleet-labelled Nodes and DRIVERS RBLNDrivers on a real kube-apiserver (bin/), then serve
# --audit --memory-limit 256Mi as the chart runs it (Ready, peak RSS), the admission rate at NODES
# / at 100 nodes (paired rounds) and audit --kubeconfig (time, peak RSS), each beside its goal.
NODES ?= 100000
DRIVERS ?= 1000
.PHONY: bench-scale test-matrix
test-matrix: ## the API-server tests against each Kubernetes minor (kube-apiserver built from Go modules): make test-matrix [K8S_MINORS="1.32 1.37"]
	K8S_MINORS='$(K8S_MINORS)' GO='$(GO)' bash hack/test-matrix.sh

bench-scale: ## the scale benchmark of issue #45 (~10 min at full size; not in make test): make bench-scale [NODES=100000] [DRIVERS=1000]
	NODES='$(NODES)' DRIVERS='$(DRIVERS)' GO='$(GO)' bash hack/bench-scale.sh

# The webhook/CLI image, built without a container daemon by hack/image (go-containerregistry):
# linux/amd64 + linux/arm64 from the HEAD commit, as an OCI image layout in bin/image/oci (named
# driverguard/driverguard:<chart appVersion>, the chart's default image) with SPDX SBOMs in
# bin/image/sbom. The same commit and Go toolchain give the same digest.
IMAGE_DIR := bin/image
.PHONY: image image-push image-test

image: ## the image as an OCI layout in bin/image/oci
	$(GO) run ./hack/image build -out $(IMAGE_DIR)

# `make test` builds the image for this machine's platform only (each platform is a cold
# cross-compile of the whole binary); this runs test/image on every platform `make image` builds.
image-test: ## test/image with every platform of the image
	DRIVERGUARD_IMAGE_PLATFORMS=all $(GO) test ./test/image/ -count=1 -timeout 30m -v

image-push: ## make image-push IMAGE=$$REGISTRY/driverguard:0.1.0 (credentials: docker config)
	@if [ -z "$(IMAGE)" ]; then echo "usage: make image-push IMAGE=<registry>/<repository>:<tag>" >&2; exit 2; fi
	@$(MAKE) --no-print-directory image
	$(GO) run ./hack/image push -layout $(IMAGE_DIR)/oci $(IMAGE)

# A release, published as charts are consumed (RELEASING.md): the signed chart and its
# provenance at oci://$(REGISTRY)/charts/driverguard:$(VERSION), the multi-platform image at
# $(REGISTRY)/driverguard:$(VERSION) (the chart's default webhook image), and in $(OUT) the
# chart, the Helm plugins (the Helm 4 ones with .prov), SBOMs and SHA256SUMS. The variables come
# from the command line or the environment (hack/release reads them); pushes use the
# credentials of `helm registry login`.
.PHONY: release
release: ## make release VERSION=1.2.3 REGISTRY=host[:port]/path SIGN_KEY=... SIGN_KEYRING=secring.gpg [OUT=dist/release]
	GO='$(GO)' $(GO) run ./hack/release
