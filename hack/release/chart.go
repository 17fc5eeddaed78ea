package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// Artifact Hub's chart annotations (artifacthub.io/docs/topics/annotations/helm) that the
// release fills in; the others (license, crds, crdsExamples, links) are in Chart.yaml.
const (
	annotationImages     = "artifacthub.io/images"
	annotationPrerelease = "artifacthub.io/prerelease"
	annotationSignKey    = "artifacthub.io/signKey"
)

// webhookImage is the default webhook image in charts/driverguard/values.yaml, the lines the
// release rewrites to the image it pushes (the comments around them stay).
var webhookImage = regexp.MustCompile(`(?m)^(    )registry: ""\n(    )repository: driverguard/driverguard\n((?:    #.*\n)*)(    )tag: ""\n`)

// releaseChart is charts/driverguard as released: version and appVersion VERSION, the
// pushed image as its default webhook image and in artifacthub.io/images, and the signing
// key's fingerprint in artifacthub.io/signKey (with SIGN_KEY_URL).
func releaseChart(root string, c config, fingerprint string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(filepath.Join(root, "charts", "driverguard"))
	if err != nil {
		return nil, fmt.Errorf("loading charts/driverguard: %w", err)
	}
	ch.Metadata.Version = c.version
	ch.Metadata.AppVersion = c.version
	if ch.Metadata.Annotations == nil {
		ch.Metadata.Annotations = map[string]string{}
	}
	ann := ch.Metadata.Annotations
	for _, key := range []string{"artifacthub.io/license", "artifacthub.io/crds", annotationImages} {
		if ann[key] == "" {
			return nil, fmt.Errorf("charts/driverguard/Chart.yaml has no %s annotation (Artifact Hub reads it)", key)
		}
	}
	images, err := imagesAnnotation(c)
	if err != nil {
		return nil, err
	}
	ann[annotationImages] = images
	if strings.Contains(c.version, "-") {
		ann[annotationPrerelease] = "true"
	} else {
		delete(ann, annotationPrerelease)
	}
	if c.signKeyURL != "" {
		key, err := yaml.Marshal(map[string]string{"fingerprint": fingerprint, "url": c.signKeyURL})
		if err != nil {
			return nil, err
		}
		ann[annotationSignKey] = string(key)
	}

	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		data, err := releaseValues(f.Data, c)
		if err != nil {
			return nil, err
		}
		f.Data = data
		if ch.Values, err = chartutil.ReadValues(data); err != nil {
			return nil, fmt.Errorf("the released values.yaml: %w", err)
		}
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("the released chart: %w", err)
	}
	// The released defaults install: what helm install checks first.
	if err := chartutil.ValidateAgainstSchema(ch, ch.Values); err != nil {
		return nil, usageError{fmt.Sprintf("REGISTRY=%q: the chart's values schema refuses the image it makes the default (%v); give a registry host name or IPv4 address and a path of lower-case names", c.registry, err)}
	}
	return ch, nil
}

// imagesAnnotation is artifacthub.io/images: the webhook image, with its platforms.
func imagesAnnotation(c config) (string, error) {
	var platforms []string
	for _, p := range c.imagePlatforms {
		platforms = append(platforms, p.OS+"/"+p.Architecture)
	}
	b, err := yaml.Marshal([]map[string]any{{"name": "driverguard", "image": c.image(), "platforms": platforms}})
	return string(b), err
}

// releaseValues is values.yaml with the webhook image set to the release's: registry
// REGISTRY's host, repository its path and driverguard, tag VERSION. Nothing else changes; the
// result is checked.
func releaseValues(data []byte, c config) ([]byte, error) {
	if n := len(webhookImage.FindAllIndex(data, -1)); n != 1 {
		return nil, fmt.Errorf("charts/driverguard/values.yaml: found the default webhook image (webhook.image registry \"\", repository driverguard/driverguard, tag \"\") %d times, want once: update hack/release/chart.go with values.yaml", n)
	}
	host, repository := c.imageRepository()
	out := webhookImage.ReplaceAll(data, []byte(fmt.Sprintf("${1}registry: %q\n${2}repository: %q\n${3}${4}tag: %q\n", host, repository, c.tag())))
	before, err := chartutil.ReadValues(data)
	if err != nil {
		return nil, fmt.Errorf("charts/driverguard/values.yaml: %w", err)
	}
	after, err := chartutil.ReadValues(out)
	if err != nil {
		return nil, fmt.Errorf("the released values.yaml: %w", err)
	}
	img, err := after.Table("webhook.image")
	if err != nil {
		return nil, fmt.Errorf("the released values.yaml: %w", err)
	}
	if img["registry"] != host || img["repository"] != repository || img["tag"] != c.tag() {
		return nil, fmt.Errorf("the released values.yaml sets webhook.image to %v, want %s", map[string]any(img), c.image())
	}
	// Everything but webhook.image is as it was.
	for _, v := range []chartutil.Values{before, after} {
		wh, err := v.Table("webhook")
		if err != nil {
			return nil, fmt.Errorf("values.yaml: %w", err)
		}
		delete(wh, "image")
	}
	if !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("the released values.yaml differs from charts/driverguard/values.yaml beyond webhook.image")
	}
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, nil
}
