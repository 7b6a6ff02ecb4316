package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// decision is the part of a decision response the suite reads.
type decision struct {
	Allow          bool           `json:"allow"`
	Decision       string         `json:"decision"`
	Reasons        []reason       `json:"reasons"`
	PolicyID       string         `json:"policy_id"`
	ModifiedInput  map[string]any `json:"modified_input"`
	BundleRevision string         `json:"bundle_revision"`
}

type reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// code is the first reason's code.
func (d decision) code() string {
	if len(d.Reasons) == 0 {
		return ""
	}
	return d.Reasons[0].Code
}

// decideOver posts one pre_tool_call request, a bash call running command for the
// agents/coding-agent passport, to the decider at addr with bearer token (none when empty) and returns
// the HTTP status, the decision and the raw body.
func decideOver(ctx context.Context, addr, token, command string) (int, decision, string, error) {
	body, err := json.Marshal(map[string]any{
		"passport":   agentsNamespace + "/" + agentSA,
		"tool_name":  "bash",
		"tool_input": map[string]any{"command": command},
		"hook":       "pre_tool_call",
		"thread_id":  "e2e",
	})
	if err != nil {
		return 0, decision{}, "", fmt.Errorf("encoding the request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/decide", bytes.NewReader(body))
	if err != nil {
		return 0, decision{}, "", fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, decision{}, "", fmt.Errorf("POST /v1/decide: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, decision{}, "", fmt.Errorf("reading the response: %w", err)
	}
	var d decision
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &d); err != nil {
			return resp.StatusCode, decision{}, string(raw), fmt.Errorf("decoding the decision %s: %w", raw, err)
		}
	}
	return resp.StatusCode, d, string(raw), nil
}

// sampleObject reads config/samples/<file> into namespace ns.
func sampleObject(file, ns string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(suite.root, "config", "samples", file))
	if err != nil {
		return nil, fmt.Errorf("reading sample %s: %w", file, err)
	}
	return yamlObject(string(data), ns)
}

// yamlObject decodes one YAML object into namespace ns ("" keeps it cluster-scoped).
func yamlObject(doc, ns string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		return nil, fmt.Errorf("decoding YAML: %w", err)
	}
	if ns != "" {
		obj.SetNamespace(ns)
	}
	return obj, nil
}
