{{/*
Shared helpers. The render package expands the same values in Go (inheriting with Helm's
chartutil.CoalesceTables, which driverguard.inherit restates); the differential test
(test/differential) proves both produce the same objects.
*/}}

{{- define "driverguard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Recommended labels of every object the chart renders. */}}
{{- define "driverguard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: driverguard
helm.sh/chart: {{ include "driverguard.chart" . }}
{{- end -}}

{{/*
driverguard.releaseLabel is the label that marks the release's own RBLNDrivers and
RBLNClusterPolicy (value: the release name): which release an object came from. It exempts
nothing from the webhook. The Go renderer writes the same label (v1alpha1.LabelRelease).
*/}}
{{- define "driverguard.releaseLabel" -}}
driverguard.rebellions.ai/release
{{- end -}}

{{/*
driverguard.prune removes every null value from a map, recursively. null means "remove
this key": at the top level Helm's own coalescing already dropped chart defaults set to
null; what is left (nulls on keys the chart has no default for) is removed here.
Input: the map to prune (modified in place).
*/}}
{{- define "driverguard.prune" -}}
{{- $m := . -}}
{{- range $k, $v := $m -}}
{{- if kindIs "invalid" $v -}}
{{- $_ := unset $m $k -}}
{{- else if kindIs "map" $v -}}
{{- include "driverguard.prune" $v -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
driverguard.inherit merges the inheritable top-level driver block (src) into an instance
(dst, modified in place): a key absent on the instance is inherited; maps present on both
are merged key by key (the instance wins); lists and scalars on the instance replace the
inherited value; null on the instance removes the inherited value. This is the semantics of
Helm's chartutil.CoalesceTables, which the Go renderer calls.
Input: dict "dst" <instance map> "src" <inherited map>.
*/}}
{{- define "driverguard.inherit" -}}
{{- $dst := .dst -}}
{{- range $k, $v := .src -}}
{{- if not (hasKey $dst $k) -}}
{{- $_ := set $dst $k (deepCopy $v) -}}
{{- else -}}
{{- $d := index $dst $k -}}
{{- if kindIs "invalid" $d -}}
{{- $_ := unset $dst $k -}}
{{- else if and (kindIs "map" $d) (kindIs "map" $v) -}}
{{- include "driverguard.inherit" (dict "dst" $d "src" $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
driverguard.checkSelector fails on selector keys the schema cannot fully check (a label key
prefix longer than 253 characters). Input: dict "sel" <map> "path" <values path>.
*/}}
{{- define "driverguard.checkSelector" -}}
{{- $path := .path -}}
{{- range $k, $v := .sel -}}
{{- if contains "/" $k -}}
{{- $prefix := index (splitList "/" $k) 0 -}}
{{- if gt (len $prefix) 253 -}}
{{- fail (printf "%s[%s]: Invalid value: selector key is not a valid label key: prefix part must be no more than 253 characters" $path $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
driverguard.spec turns an effective driver block into an RBLNDriver spec (as a dict).
Empty values are omitted. Input: dict "e" <effective map> "name" <resource name> "path" <values path>.
*/}}
{{- define "driverguard.spec" -}}
{{- $e := .e -}}
{{- $name := .name -}}
{{- $img := $e.image | default dict -}}
{{- $spec := dict -}}
{{- range $field := list (list "registry" "registry") (list "repository" "image") (list "tag" "version") -}}
{{- $v := index $img (index $field 0) -}}
{{- if not $v -}}
{{- fail (printf "%s: spec.%s is empty: set %s.image.%s (an instance inherits driver.image.%s unless it sets or clears it)" $name (index $field 1) $.path (index $field 0) (index $field 0)) -}}
{{- end -}}
{{- $_ := set $spec (index $field 1) $v -}}
{{- end -}}
{{- with $img.pullPolicy }}{{ $_ := set $spec "imagePullPolicy" . }}{{ end -}}
{{- with $e.imagePullSecrets }}{{ $_ := set $spec "imagePullSecrets" . }}{{ end -}}
{{- $mgr := dict -}}
{{- with $e.manager }}{{ with .image -}}
{{- with .registry }}{{ $_ := set $mgr "registry" . }}{{ end -}}
{{- with .repository }}{{ $_ := set $mgr "image" . }}{{ end -}}
{{- with .tag }}{{ $_ := set $mgr "version" . }}{{ end -}}
{{- with .pullPolicy }}{{ $_ := set $mgr "imagePullPolicy" . }}{{ end -}}
{{- end }}{{ end -}}
{{- with $mgr }}{{ $_ := set $spec "manager" . }}{{ end -}}
{{- $smd := dict -}}
{{- with $e.smd }}{{ with .image -}}
{{- with .registry }}{{ $_ := set $smd "registry" . }}{{ end -}}
{{- with .repository }}{{ $_ := set $smd "image" . }}{{ end -}}
{{- end }}{{ end -}}
{{- with $smd }}{{ $_ := set $spec "smd" . }}{{ end -}}
{{- with $e.nodeSelector }}{{ $_ := set $spec "nodeSelector" . }}{{ end -}}
{{- with $e.tolerations }}{{ $_ := set $spec "tolerations" . }}{{ end -}}
{{- with $e.annotations }}{{ $_ := set $spec "annotations" . }}{{ end -}}
{{- with $e.priorityClassName }}{{ $_ := set $spec "priorityClassName" . }}{{ end -}}
{{- with $e.resources }}{{ $_ := set $spec "resources" (include "driverguard.quantities" . | fromYaml) }}{{ end -}}
{{- with $e.env }}{{ $_ := set $spec "env" . }}{{ end -}}
{{- toYaml $spec -}}
{{- end -}}

{{/*
driverguard.drivers expands driver.* into the list of RBLNDrivers to render, as YAML
{items: [{name, key, spec}]}, default first, then instances by key. It fails (all or
nothing) on input the schema cannot reject on its own.
*/}}
{{- define "driverguard.drivers" -}}
{{- $d := .Values.driver -}}
{{- $instances := $d.instances | default dict -}}
{{- $items := list -}}
{{- if $d.enabled -}}
{{- $base := omit (deepCopy $d) "nodeSelector" "instances" "upgradePolicy" "enabled" "deployDefault" -}}
{{- include "driverguard.prune" $base -}}
{{- if $d.deployDefault -}}
{{- $e := deepCopy $base -}}
{{- $sel := deepCopy ($d.nodeSelector | default dict) -}}
{{- include "driverguard.prune" $sel -}}
{{- include "driverguard.checkSelector" (dict "sel" $sel "path" "driver.nodeSelector") -}}
{{- $_ := set $e "nodeSelector" $sel -}}
{{- $spec := include "driverguard.spec" (dict "e" $e "name" "rbln-driver" "path" "driver") | fromYaml -}}
{{- $items = append $items (dict "name" "rbln-driver" "key" "" "spec" $spec) -}}
{{- else if not $instances -}}
{{- fail "driver.deployDefault: Invalid value: false: it removes the default resource, so at least one entry in driver.instances is required" -}}
{{- end -}}
{{- range $key := keys $instances | sortAlpha -}}
{{- $raw := index $instances $key -}}
{{- $path := printf "driver.instances.%s" $key -}}
{{- if not (kindIs "map" $raw) -}}
{{- fail (printf "%s: Invalid value: must be a map with at least a nodeSelector" $path) -}}
{{- end -}}
{{- $inst := deepCopy $raw -}}
{{- $sel := $inst.nodeSelector | default dict -}}
{{- include "driverguard.checkSelector" (dict "sel" $sel "path" (printf "%s.nodeSelector" $path)) -}}
{{- $inst = omit $inst "nodeSelector" -}}
{{- include "driverguard.inherit" (dict "dst" $inst "src" $base) -}}
{{- include "driverguard.prune" $inst -}}
{{- $_ := set $inst "nodeSelector" $sel -}}
{{- $name := printf "rbln-driver-%s" $key -}}
{{- $spec := include "driverguard.spec" (dict "e" $inst "name" $name "path" $path) | fromYaml -}}
{{- $items = append $items (dict "name" $name "key" $key "spec" $spec) -}}
{{- end -}}
{{- else if $instances -}}
{{- fail "driver.instances: Forbidden: driver.enabled is false, so no RBLNDriver is rendered; remove the instances or set driver.enabled=true" -}}
{{- end -}}
{{- toYaml (dict "items" $items) -}}
{{- end -}}

{{/*
driverguard.quantities is a resources map whose limits and requests the API server accepts:
the CRD's quantities are integers or strings, and a number with a fraction (cpu: 0.5) is
refused as the wrong type, so it is written as the string "0.5"; whole numbers and strings stay
as they are.
*/}}
{{- define "driverguard.quantities" -}}
{{- $out := dict -}}
{{- range $k, $v := . -}}
{{- if and (has $k (list "limits" "requests")) (kindIs "map" $v) -}}
{{- $q := dict -}}
{{- range $name, $amount := $v -}}
{{- if and (kindIs "float64" $amount) (ne (float64 (int64 $amount)) $amount) -}}
{{- $_ := set $q $name (toString $amount) -}}
{{- else -}}
{{- $_ := set $q $name $amount -}}
{{- end -}}
{{- end -}}
{{- $_ := set $out $k $q -}}
{{- else -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
