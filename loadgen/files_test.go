package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/loadgen/internal/echotest"
	"github.com/knowngood/knowngood/loadgen/internal/htmltest"
	"github.com/knowngood/knowngood/loadgen/internal/siotest"
	"github.com/knowngood/knowngood/loadgen/timeline"
)

// TestFiles runs two scenarios with -json, -csv and -html, and reads each
// file back: the JSON's samples, the CSV's rows, and the HTML's charts and
// tables, with nothing fetched from elsewhere.
func TestFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		seconds int // rows of the CSV
		svgs    int // charts in the page
		tables  map[string]int
	}{
		{"echo", []string{"echo", "-url", echotest.StartWebSocket(t, echotest.Options{}).URL, "-c", "2", "-warmup", "0s", "-duration", "1500ms", "-admin", ""},
			2, 4, map[string]int{"sidebyside": 1, "samples": 1}},
		// One handshake run is one point of success rate vs concurrency.
		{"handshake", []string{"handshake", "-url", siotest.StartServer(t), "-n", "5", "-deadline", "5s", "-admin", ""},
			1, 5, map[string]int{"sidebyside": 1, "samples": 1, "success": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			jsonPath, csvPath, htmlPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.html")
			var stdout, stderr strings.Builder
			if code := run(context.Background(), append(tc.args, "-json", jsonPath, "-csv", csvPath, "-html", htmlPath), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if stderr.Len() > 0 { // no progress bar off a terminal
				t.Errorf("stderr: %q", stderr.String())
			}

			var rep struct{ Samples []timeline.Sample }
			if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Samples) < tc.seconds {
				t.Errorf("json: %v; samples %+v", err, rep.Samples)
			}
			if n, _ := timeline.Total(rep.Samples); n == 0 {
				t.Errorf("json: nothing counted in %+v", rep.Samples)
			}

			f, err := os.Open(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil || len(rows) != 1+len(rep.Samples) || !reflect.DeepEqual(rows[0], timeline.CSVHeader) {
				t.Errorf("csv: %v, rows %q", err, rows)
			}

			h, err := os.Open(htmlPath)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			page := htmltest.Parse(t, h)
			if page.SVGs != tc.svgs || !reflect.DeepEqual(page.Tables, tc.tables) {
				t.Errorf("html: %d charts, tables %v; want %d, %v", page.SVGs, page.Tables, tc.svgs, tc.tables)
			}
			if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.Contains(page.Text, first) {
				t.Errorf("html: no %q", first)
			}
		})
	}
}
