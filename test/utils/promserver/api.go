package promserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// apiResponse is the envelope of every /api/v1 answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

// queryData is the data of a query answer.
type queryData struct {
	ResultType model.ValueType `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// get calls the API at path with params and decodes its data into out. An answer with status
// "error" (a bad expression, a failed evaluation) is an error that carries Prometheus's message.
func (s *Server) get(ctx context.Context, path string, params url.Values, out any) error {
	u := s.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s %v: %s: %s", path, params, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// Query evaluates expr at instant at and returns the vector it yields (a scalar becomes a
// vector of one sample without labels).
func (s *Server) Query(ctx context.Context, expr string, at time.Time) (model.Vector, error) {
	var d queryData
	params := url.Values{"query": {expr}, "time": {unixSeconds(at)}}
	if err := s.get(ctx, "/api/v1/query", params, &d); err != nil {
		return nil, err
	}
	switch d.ResultType {
	case model.ValVector:
		var v model.Vector
		err := json.Unmarshal(d.Result, &v)
		return v, err
	case model.ValScalar:
		var sc model.Scalar
		if err := json.Unmarshal(d.Result, &sc); err != nil {
			return nil, err
		}
		return model.Vector{{Metric: model.Metric{}, Value: sc.Value, Timestamp: sc.Timestamp}}, nil
	default:
		return nil, fmt.Errorf("query %q: result type %s, want a vector", expr, d.ResultType)
	}
}

// QueryRange evaluates expr at every step from start to end, as a graph panel does.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	var d queryData
	params := url.Values{"query": {expr}, "start": {unixSeconds(start)}, "end": {unixSeconds(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := s.get(ctx, "/api/v1/query_range", params, &d); err != nil {
		return nil, err
	}
	if d.ResultType != model.ValMatrix {
		return nil, fmt.Errorf("range query %q: result type %s, want a matrix", expr, d.ResultType)
	}
	var m model.Matrix
	err := json.Unmarshal(d.Result, &m)
	return m, err
}

// Rule is one rule as /api/v1/rules reports it.
type Rule struct {
	Name   string `json:"name"`
	Query  string `json:"query"`
	Type   string `json:"type"`
	Health string `json:"health"`
	// LastError is the error of the rule's last evaluation; empty when it succeeded.
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	// State is an alerting rule's state: inactive, pending or firing.
	State string `json:"state"`
}

// RuleGroup is one group of rules as /api/v1/rules reports it.
type RuleGroup struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Rules []Rule `json:"rules"`
}

// Rules returns the loaded rule groups with each rule's health and last evaluation.
func (s *Server) Rules(ctx context.Context) ([]RuleGroup, error) {
	var d struct {
		Groups []RuleGroup `json:"groups"`
	}
	err := s.get(ctx, "/api/v1/rules", nil, &d)
	return d.Groups, err
}

// Target is one active scrape target as /api/v1/targets reports it.
type Target struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
	// LastScrape is zero until the target was scraped once.
	LastScrape time.Time `json:"lastScrape"`
}

// Targets returns the active scrape targets.
func (s *Server) Targets(ctx context.Context) ([]Target, error) {
	var d struct {
		Active []Target `json:"activeTargets"`
	}
	err := s.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &d)
	return d.Active, err
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}
