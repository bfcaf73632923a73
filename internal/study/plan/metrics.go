package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/headroom-sim/headroom/sim"
)

// Metrics flattens a report's scalar figures into ordered columns
// ("ttft_ms.p99", "throughput.output_tokens_per_s" …), skipping stages and
// the time series.
func Metrics(rep *sim.Report) (names []string, values []float64) {
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var walk func(prefix string) error
	walk = func(prefix string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return err
					}
					k := kt.(string)
					p := k
					if prefix != "" {
						p = prefix + "." + k
					}
					if p == "stages" || p == "timeseries" || p == "sla" || p == "requests.rejected_reasons" {
						var skip json.RawMessage
						if err := dec.Decode(&skip); err != nil {
							return err
						}
						continue
					}
					if err := walk(p); err != nil {
						return err
					}
				}
				_, err := dec.Token() // '}'
				return err
			case '[':
				var skip json.RawMessage
				for dec.More() {
					if err := dec.Decode(&skip); err != nil {
						return err
					}
				}
				_, err := dec.Token()
				return err
			}
		case json.Number:
			v, _ := t.Float64()
			names = append(names, prefix)
			values = append(values, v)
		case bool:
			v := 0.0
			if t {
				v = 1
			}
			names = append(names, prefix)
			values = append(values, v)
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, nil
	}
	return names, values
}

// Metric reads one flattened figure by name.
func Metric(rep *sim.Report, name string) (float64, error) {
	names, values := Metrics(rep)
	for i, n := range names {
		if n == name {
			return values[i], nil
		}
	}
	return 0, fmt.Errorf("unknown report metric %q (e.g. %s)", name, strings.Join(names[:min(6, len(names))], ", "))
}
