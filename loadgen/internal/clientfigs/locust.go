package clientfigs

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// LocustRequestType is the request type a locustfile gives its Socket.IO
// requests (Locust's events.request.fire) for loadgen watch to read them:
// the request named "connect" is a connection, every other one an event
// emitted, counted back when it did not fail (its ack came), as
// scripts/locust/locustfile.py does.
const LocustRequestType = "socketio"

// readLocust reads Locust's figures: from the statistics table it prints
// last (on stderr, as it exits), which holds every request; else from its
// PREFIX_stats.csv, which Locust 2.12 writes each second but not once
// more at the end, so that it misses the requests of the last second.
func readLocust(out Output, report string) (Figures, error) {
	if f, ok := parseLocustTable(out.Stderr); ok {
		f.Source = "locust summary"
		return f, nil
	}
	return readFile(report, "locust stats", parseLocust)
}

// locustRow is a row of Locust's statistics table: type, name, requests,
// failures ("socketio  connect   10   0(0.00%) | ...").
var locustRow = regexp.MustCompile(`^(\S+)\s+(\S.*?)\s+(\d+)\s+(\d+)\(\d+(?:\.\d+)?%\)\s+\|`)

// parseLocustTable reads the last statistics table in Locust's output
// (its header: "Type     Name ... # reqs      # fails |").
func parseLocustTable(b []byte) (Figures, bool) {
	var last []string
	var rows []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Type ") && strings.Contains(line, "# reqs") && strings.Contains(line, "# fails"):
			in, rows = true, nil
		case in && strings.HasPrefix(line, "-----"):
		case in && locustRow.MatchString(line):
			rows = append(rows, line)
		case in:
			in, last = false, rows
		}
	}
	if in {
		last = rows
	}
	if last == nil {
		return Unknown(), false
	}
	var csvRows [][]string
	csvRows = append(csvRows, []string{"Type", "Name", "Request Count", "Failure Count"})
	for _, line := range last {
		m := locustRow.FindStringSubmatch(line)
		csvRows = append(csvRows, []string{m[1], m[2], m[3], m[4]})
	}
	f, err := locustFigures(csvRows)
	return f, err == nil
}

// parseLocust reads Locust's PREFIX_stats.csv (--csv PREFIX): a row per
// request type and name, "Request Count" and "Failure Count" in columns of
// those names. Rows of another type than LocustRequestType (HTTP
// requests, say) count nothing the target's figures count: with none of
// that type the figures are unknown.
func parseLocust(raw []byte) (Figures, error) {
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		return Unknown(), err
	}
	return locustFigures(rows)
}

// locustFigures counts rows of Locust's statistics, a header first.
func locustFigures(rows [][]string) (Figures, error) {
	if len(rows) == 0 {
		return Unknown(), errors.New("empty")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{"Type", "Name", "Request Count", "Failure Count"} {
		if _, ok := col[need]; !ok {
			return Unknown(), fmt.Errorf("no %q column in its header %q", need, rows[0])
		}
	}
	f := Unknown()
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) || r[col["Type"]] != LocustRequestType {
			continue
		}
		requests, err1 := strconv.ParseInt(r[col["Request Count"]], 10, 64)
		failures, err2 := strconv.ParseInt(r[col["Failure Count"]], 10, 64)
		if err1 != nil || err2 != nil || failures > requests {
			return Unknown(), fmt.Errorf("row %q: bad counts", r)
		}
		if r[col["Name"]] == "connect" {
			f.Attempts, f.OK = int(requests), int(requests-failures)
			continue
		}
		f.Sent = max(f.Sent, 0) + requests
		f.Received = max(f.Received, 0) + requests - failures
	}
	return f, nil
}
