{{- define "probe.kinds" -}}
{{- if kindIs "map" .Values.cgpu -}}
{{- range $k, $v := .Values.cgpu }}{{ $k }}={{ kindOf $v }};{{ end -}}
|
{{- range $k := list "enabled" "image" "tag" "financeCloudImageTag" "imagePullPolicy" "policy" "nodeSelector" "checkRegions" }}{{ $k }}:{{ hasKey $.Values.cgpu $k }};{{ end -}}
{{- else -}}
cgpu={{ kindOf .Values.cgpu }}
{{- end -}}
{{- end -}}
