// Package htmlreport writes loadgen's -html file: one self-contained HTML
// page (inline CSS and inline SVG charts drawn with go-analyze/charts; no
// script, no stylesheet or font fetched) that opens offline.
//
// It takes one run or several: loadgen writes one, and an experiment that
// runs a scenario at several concurrencies, on several variants or with
// several clients passes them all, which draws the success rate against
// concurrency with one line per group. For each run that has more than
// its counts it shows the report
// (text and the client-vs-server table), a bar chart of the client's
// counts against the server's, the throughput and latency of every second,
// and the latency distribution. Every part is left out when its run has no
// data for it, so a run from another tool (only its counts and
// percentiles) fits too.
package htmlreport

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"

	"github.com/go-analyze/charts"

	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Run is one run in the report. Only Name is needed.
type Run struct {
	// Name labels the run: its heading, its row in the success table.
	Name string
	// Group names the line this run belongs to in the success-rate chart,
	// such as "blocking, loadgen"; "" = Name.
	Group string
	// Concurrency is the connections the run opened at once; with
	// Attempts > 0 it puts the run in the success-rate chart and table.
	Concurrency int
	Attempts    int
	Succeeded   int
	// Report is the run's report as text and tables, in order (from
	// Sections, or made by hand).
	Report []Section
	// Counts are the client's counts and the server's for one chart.
	Counts []Count
	// Samples are the run's seconds; Unit names what they count
	// ("echoes", "handshakes", ...).
	Samples []timeline.Sample
	Unit    string
	// Distribution is the run's latency histogram (timeline.Distribution).
	Distribution []protocol.Bucket
}

// Section is text (Text) or a table (Columns and Rows).
type Section = sidebyside.Part

// Count is one figure counted by both sides; Server is nil when the
// server did not say.
type Count struct {
	Name   string
	Client float64
	Server *float64
}

// Sections captures what write (a report's WriteTable) prints, its table as
// a table: the same figures as the terminal's.
func Sections(write func(io.Writer) error) ([]Section, error) {
	var c sidebyside.Capture
	err := write(&c)
	return c.Parts, err
}

// WithReport is r with its Report captured from write (see Sections).
func (r Run) WithReport(write func(io.Writer) error) (Run, error) {
	var err error
	r.Report, err = Sections(write)
	return r, err
}

// FloatOf is *v as a float64 for a Count's Server; nil for nil.
func FloatOf[T int64 | uint64](v *T) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

// WriteHTML writes the page for runs under title.
func WriteHTML(w io.Writer, title string, runs []Run) error {
	page := pageData{Title: title}
	var err error
	if page.Success, page.SuccessChart, err = successRate(runs); err != nil {
		return err
	}
	for _, r := range runs {
		v := runView{Run: r}
		if v.CountsChart, err = countsChart(r.Counts); err != nil {
			return err
		}
		if v.ThroughputChart, v.LatencyChart, err = sampleCharts(r.Samples, r.Unit); err != nil {
			return err
		}
		if v.DistributionChart, err = distributionChart(r.Distribution); err != nil {
			return err
		}
		page.Runs = append(page.Runs, v)
	}
	return pageTemplate.Execute(w, page)
}

type pageData struct {
	Title        string
	Success      []successRow
	SuccessChart template.HTML
	Runs         []runView
}

type runView struct {
	Run
	CountsChart, ThroughputChart, LatencyChart, DistributionChart template.HTML
}

type successRow struct {
	Group, Name           string
	Concurrency, Attempts int
	Succeeded             int
	Rate                  float64 // percent
}

// successRate is the table and the chart of success rate against
// concurrency, one line per group; nothing when no run has attempts.
func successRate(runs []Run) ([]successRow, template.HTML, error) {
	var rows []successRow
	var groups []string
	var levels []int
	for _, r := range runs {
		if r.Concurrency <= 0 || r.Attempts <= 0 {
			continue
		}
		g := cmp.Or(r.Group, r.Name)
		rows = append(rows, successRow{Group: g, Name: r.Name, Concurrency: r.Concurrency, Attempts: r.Attempts,
			Succeeded: r.Succeeded, Rate: 100 * float64(r.Succeeded) / float64(r.Attempts)})
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(levels, r.Concurrency) {
			levels = append(levels, r.Concurrency)
		}
	}
	if len(rows) == 0 {
		return nil, "", nil
	}
	slices.Sort(levels)
	values := make([][]float64, len(groups))
	for i := range values {
		values[i] = make([]float64, len(levels))
		for j := range values[i] {
			values[i][j] = charts.GetNullValue()
		}
	}
	for _, row := range rows {
		values[slices.Index(groups, row.Group)][slices.Index(levels, row.Concurrency)] = row.Rate
	}
	labels := make([]string, len(levels))
	for i, l := range levels {
		labels[i] = strconv.Itoa(l)
	}
	opt := charts.NewLineChartOptionWithData(values)
	opt.XAxis.Labels = labels
	opt.YAxis = []charts.YAxisOption{{Min: charts.Ptr(0.0), Max: charts.Ptr(100.0), LabelCount: 6}}
	legend(&opt.Legend, groups)
	chart, err := render("success rate (%) by connections at once", func(p *charts.Painter) error { return p.LineChart(opt) })
	return rows, chart, err
}

// countsChart draws the client's counts beside the server's.
func countsChart(counts []Count) (template.HTML, error) {
	if len(counts) == 0 {
		return "", nil
	}
	client, server := make([]float64, len(counts)), make([]float64, len(counts))
	labels := make([]string, len(counts))
	for i, c := range counts {
		labels[i], client[i], server[i] = c.Name, c.Client, charts.GetNullValue()
		if c.Server != nil {
			server[i] = *c.Server
		}
	}
	opt := charts.NewBarChartOptionWithData([][]float64{client, server})
	opt.CategoryAxis.Labels = labels
	opt.ValueAxis = []charts.ValueAxisOption{{Min: charts.Ptr(0.0)}}
	legend(&opt.Legend, []string{"client", "server"})
	opt.SeriesLabelPosition = charts.PositionTop
	return render("client vs server", func(p *charts.Painter) error { return p.BarChart(opt) })
}

// sampleCharts draws the throughput of every second, and its p50 and p99.
func sampleCharts(samples []timeline.Sample, unit string) (throughput, latency template.HTML, err error) {
	if len(samples) == 0 {
		return "", "", nil
	}
	labels := make([]string, len(samples))
	count := make([]float64, len(samples))
	p50, p99 := make([]float64, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		labels[i] = strconv.Itoa(s.Second)
		count[i] = float64(s.Count)
		p50[i], p99[i] = orNull(s.P50ms), orNull(s.P99ms)
	}
	opt := charts.NewLineChartOptionWithData([][]float64{count})
	opt.XAxis.Labels = labels
	opt.YAxis = []charts.YAxisOption{{Min: charts.Ptr(0.0)}}
	title := cmp.Or(unit, "events") + " per second, by second of the run"
	if throughput, err = render(title, func(p *charts.Painter) error { return p.LineChart(opt) }); err != nil {
		return "", "", err
	}
	lopt := charts.NewLineChartOptionWithData([][]float64{p50, p99})
	lopt.XAxis.Labels = labels
	lopt.YAxis = []charts.YAxisOption{{Min: charts.Ptr(0.0)}}
	legend(&lopt.Legend, []string{"p50", "p99"})
	latency, err = render("latency (ms), by second of the run", func(p *charts.Painter) error { return p.LineChart(lopt) })
	return throughput, latency, err
}

// maxBucketLabels is how many bucket labels the distribution chart's
// axis shows at most: about 90 px each of its 740, room for "≤500ms" at
// 16 px in a browser's sans-serif (about 65 px) and a gap.
const maxBucketLabels = 8

// distributionChart draws the latency histogram, one bar per bucket.
func distributionChart(buckets []protocol.Bucket) (template.HTML, error) {
	if len(buckets) == 0 {
		return "", nil
	}
	labels := make([]string, len(buckets))
	counts := make([]float64, len(buckets))
	// The library's own guess of how many labels fit measures them in its
	// font, not the browser's: a wide distribution (18 buckets, 1 µs to
	// 500 ms, as a run on a busy machine has) had neighbours overlap. So
	// the labels are thinned here, every bucket's up to maxBucketLabels,
	// then every second's, and so on from the first, and the library draws
	// every one it is given (a bucket left unlabelled has "").
	every := (len(buckets) + maxBucketLabels - 1) / maxBucketLabels
	for i, b := range buckets {
		if i%every == 0 {
			labels[i] = "≤" + micros(b.UpToMicros)
		}
		counts[i] = float64(b.Count)
	}
	opt := charts.NewBarChartOptionWithData([][]float64{counts})
	opt.CategoryAxis.Labels = labels
	opt.CategoryAxis.LabelCount = len(labels)
	opt.ValueAxis = []charts.ValueAxisOption{{Min: charts.Ptr(0.0)}}
	return render("latency distribution (count per bucket)", func(p *charts.Painter) error { return p.BarChart(opt) })
}

// legend names the series above the chart, left-aligned; none for one
// series, which the title names. The chart's title is not drawn in the
// SVG (render puts it above in HTML): the library lays a legend and a
// title at the top out independently, and a long legend ran over the
// title.
func legend(l *charts.LegendOption, names []string) {
	if len(names) < 2 {
		l.Show = charts.Ptr(false)
		return
	}
	l.SeriesNames = names
	l.Offset = charts.OffsetLeft
}

// render draws one chart as inline SVG under title. Axis titles are left
// out, and said in the title: the library draws an axis title where a
// lone tick label goes (a one-second run), over it.
func render(title string, draw func(*charts.Painter) error) (template.HTML, error) {
	p := charts.NewPainter(charts.PainterOptions{Width: 800, Height: 320, OutputFormat: charts.ChartOutputSVG})
	if err := draw(p); err != nil {
		return "", err
	}
	b, err := p.Bytes()
	if err != nil {
		return "", err
	}
	// The SVG is the library's own output from our numbers and labels,
	// which it escapes.
	return template.HTML(`<figure><figcaption>` + template.HTMLEscapeString(title) + `</figcaption>` + string(bytes.TrimSpace(b)) + `</figure>`), nil
}

func orNull(v *float64) float64 {
	if v == nil {
		return charts.GetNullValue()
	}
	return *v
}

// micros writes a bound in µs, ms or s.
func micros(us int64) string {
	switch {
	case us < 1000:
		return strconv.FormatInt(us, 10) + "µs"
	case us < 1000000:
		return strconv.FormatFloat(float64(us)/1000, 'g', -1, 64) + "ms"
	}
	return strconv.FormatFloat(float64(us)/1e6, 'g', -1, 64) + "s"
}

func percent(v float64) string { return fmt.Sprintf("%.1f%%", v) }

func ms(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"percent": percent, "ms": ms}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.2em; border-top: 1px solid #ccc; padding-top: 1em; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.n { text-align: right; }
pre { background: #f6f6f6; padding: 0.5em; white-space: pre-wrap; }
figure { margin: 1.5em 0; }
figcaption { font-weight: bold; font-size: 0.95em; }
svg { width: 100%; height: auto; display: block; margin: 0.3em 0 0; }
details { margin: 1em 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Success}}
<h2>Success rate vs concurrency</h2>
{{.SuccessChart}}
<table class="success">
<tr><th>group</th><th>run</th><th>concurrency</th><th>attempts</th><th>succeeded</th><th>rate</th></tr>
{{range .Success}}<tr><td>{{.Group}}</td><td>{{.Name}}</td><td class="n">{{.Concurrency}}</td><td class="n">{{.Attempts}}</td><td class="n">{{.Succeeded}}</td><td class="n">{{percent .Rate}}</td></tr>
{{end}}</table>
{{end}}
{{range .Runs}}{{if or .Report .Counts .Samples .Distribution}}
<section class="run">
<h2>{{.Name}}</h2>
{{range .Report}}{{if .Columns}}<table class="sidebyside">
<tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{else}}<pre>{{.Text}}</pre>
{{end}}{{end}}
{{.CountsChart}}
{{.ThroughputChart}}
{{.LatencyChart}}
{{.DistributionChart}}
{{if .Samples}}<details><summary>every second</summary>
<table class="samples">
<tr><th>second</th><th>{{or .Unit "events"}}</th><th>errors</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr>
{{range .Samples}}<tr><td class="n">{{.Second}}</td><td class="n">{{.Count}}</td><td class="n">{{.Errors}}</td><td class="n">{{ms .P50ms}}</td><td class="n">{{ms .P99ms}}</td><td class="n">{{ms .MaxMs}}</td></tr>
{{end}}</table>
</details>{{end}}
</section>
{{end}}{{end}}
</body>
</html>
`))
