// Package htmltest checks the -html files of loadgen in tests.
package htmltest

import (
	"io"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// Page is what a test finds in a written page.
type Page struct {
	SVGs   int
	Tables map[string]int // by class
	Text   string
}

// Parse parses an HTML page, and fails t when it is not self-contained: a
// script, or anything (src, href, link) fetched from http(s).
func Parse(t testing.TB, r io.Reader) Page {
	t.Helper()
	doc, err := html.Parse(r)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	p := Page{Tables: map[string]int{}}
	var text strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "svg":
				p.SVGs++
			case "script", "link", "iframe", "img":
				t.Errorf("a <%s> element: the page should stand alone", n.Data)
			case "table":
				for _, a := range n.Attr {
					if a.Key == "class" {
						p.Tables[a.Val]++
					}
				}
			}
			for _, a := range n.Attr {
				if (a.Key == "src" || a.Key == "href" || strings.HasSuffix(a.Key, ":href")) && strings.Contains(a.Val, "//") {
					t.Errorf("<%s %s=%q>: fetched from elsewhere", n.Data, a.Key, a.Val)
				}
			}
		}
		if n.Type == html.TextNode {
			text.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	p.Text = text.String()
	return p
}
