{{/* The namespace everything namespaced goes into. */}}
{{- define "mgr-webhook.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end }}

{{/* Labels of every object (and, app.kubernetes.io/instance, of every pod:
not of a selector, which stays what kustomize installs: selectors are
immutable, so a selector of the release's name would break every upgrade
of an install made before it). */}}
{{- define "mgr-webhook.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: mgr-webhook
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* An image reference: (list $ .Values.image.<component>): image.registry
(else global.image.registry) replaces the repository's registry; a digest
wins over the tag. */}}
{{- define "mgr-webhook.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- $repo := $img.repository -}}
{{- with $root.Values.image.registry | default (dig "image" "registry" "" ($root.Values.global | default dict)) -}}
{{- $parts := splitn "/" 2 $repo -}}
{{- $repo = printf "%s/%s" . (ternary $parts._1 $repo (and (or (contains "." $parts._0) (contains ":" $parts._0) (eq $parts._0 "localhost")) (ne $parts._1 ""))) -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end }}
