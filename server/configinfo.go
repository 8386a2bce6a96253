package server

import "github.com/prometheus/client_golang/prometheus"

// configInfo is toolgate_config_info{sha256}: always 1, one series, whose
// label is the short SHA-256 of the config in force (Config.SHA256, ""
// for a Config made in Go), so that an operator sees at a glance whether
// every instance of a fleet runs the same. A reload changes the label of
// the one series; the old one is gone at once.
type configInfo struct {
	desc *prometheus.Desc
	sum  func() *string
}

func newConfigInfo(sum func() *string) *configInfo {
	return &configInfo{
		desc: prometheus.NewDesc("toolgate_config_info",
			"Always 1: the label sha256 is the first 12 hex digits of the SHA-256 of the config file in force (empty for a config made in Go).",
			[]string{"sha256"}, nil),
		sum: sum,
	}
}

func (c *configInfo) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *configInfo) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, *c.sum())
}
