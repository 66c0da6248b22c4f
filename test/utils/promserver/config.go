package promserver

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// Job is one scrape job whose targets come from a file_sd file the test writes
// (Server.SetTargets).
type Job struct {
	// Name is the job label and names the targets file.
	Name string
	// HonorLabels keeps the scraped series' own labels over the target's, as a ServiceMonitor's
	// honorLabels does; the operator's per-cluster series need it (docs/monitoring.md,
	// "Scraping").
	HonorLabels bool
}

// TargetGroup is one entry of a file_sd file: addresses and the labels every series scraped
// from them gets.
type TargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// targetsFile is where the targets of job live under the server's folder.
func targetsFile(dir, job string) string { return filepath.Join(dir, "targets", job+".json") }

// config is the part of Prometheus's configuration file the server uses.
type config struct {
	Global        globalConfig   `json:"global"`
	RuleFiles     []string       `json:"rule_files,omitempty"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
}

type globalConfig struct {
	ScrapeInterval     string `json:"scrape_interval"`
	ScrapeTimeout      string `json:"scrape_timeout"`
	EvaluationInterval string `json:"evaluation_interval"`
}

type scrapeConfig struct {
	JobName     string         `json:"job_name"`
	HonorLabels bool           `json:"honor_labels,omitempty"`
	FileSD      []fileSDConfig `json:"file_sd_configs"`
}

type fileSDConfig struct {
	Files []string `json:"files"`
	// RefreshInterval is the fallback re-read; the file watch picks a rename up at once.
	RefreshInterval string `json:"refresh_interval"`
}

// renderConfig returns Prometheus's configuration for jobs under dir: every job scrapes and
// every rule file is evaluated each interval, so a state that lasts a few seconds is seen.
func renderConfig(dir string, interval time.Duration, jobs []Job, ruleFiles []string) ([]byte, error) {
	if interval <= 0 || interval%time.Second != 0 {
		return nil, fmt.Errorf("scrape interval %s: want whole seconds", interval)
	}
	every := promDuration(interval)
	c := config{
		Global:    globalConfig{ScrapeInterval: every, ScrapeTimeout: every, EvaluationInterval: every},
		RuleFiles: ruleFiles,
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" || seen[j.Name] {
			return nil, fmt.Errorf("job name %q: want a unique, non-empty name", j.Name)
		}
		seen[j.Name] = true
		c.ScrapeConfigs = append(c.ScrapeConfigs, scrapeConfig{
			JobName:     j.Name,
			HonorLabels: j.HonorLabels,
			FileSD:      []fileSDConfig{{Files: []string{targetsFile(dir, j.Name)}, RefreshInterval: "5s"}},
		})
	}
	return yaml.Marshal(c)
}

// promDuration formats d as a Prometheus duration (whole seconds).
func promDuration(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }

// renderTargets returns the content of a file_sd file; an empty list is a valid file that
// drops every target of the job.
func renderTargets(groups []TargetGroup) ([]byte, error) {
	if groups == nil {
		groups = []TargetGroup{}
	}
	return json.MarshalIndent(groups, "", "  ")
}
