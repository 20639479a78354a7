package kbdoc

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are the elements whose content is not text a reader sees:
// scripts, styles and the like are dropped whole, never run nor kept.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Svg: true, atom.Math: true,
	atom.Head: true, atom.Button: true, atom.Select: true, atom.Textarea: true,
}

// blocks end a paragraph where they start and end.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true, atom.Blockquote: true,
	atom.Pre: true, atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Table: true, atom.Form: true,
	atom.Figure: true, atom.Figcaption: true, atom.Hr: true, atom.Address: true, atom.Details: true,
	atom.Summary: true, atom.Body: true, atom.Caption: true,
}

// extractHTML parses HTML (as a browser would, forgiving errors) and keeps
// its text: headings h1 to h6 start sections, list items become "- "
// lines, table rows lines of cells separated by " | ", other block
// elements paragraphs. Comments and the elements in skipped are dropped.
func extractHTML(l *limits, data []byte) (*Document, error) {
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("is not readable HTML: %v: %w", err, ErrUnsupported)
	}
	htmlDepth(l, root)
	w := &htmlWalker{b: builder{lim: l}, lim: l}
	if t := findTitle(root); t != "" {
		w.title = t
	}
	w.walk(root)
	w.endPara(false)
	d := w.b.document()
	if len(d.Sections) == 0 && w.title != "" {
		d.Sections = []Section{{Text: w.title}}
	}
	return d, nil
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		return strings.TrimSpace(textOf(n))
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// htmlDepth refuses a tree nested deeper than the limit, before any
// recursive walk of it.
func htmlDepth(l *limits, root *html.Node) {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{root, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		l.tick()
		l.depth(it.depth, "elements")
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
}

type htmlWalker struct {
	lim   *limits
	b     builder
	title string
	para  strings.Builder
	line  bool // the paragraph being built is a line (list item, row)
	pre   int  // depth of <pre>
}

func (w *htmlWalker) endPara(line bool) {
	text := w.para.String()
	if w.pre == 0 {
		text = strings.Join(strings.Fields(text), " ")
	}
	w.b.paragraph(text, w.line)
	w.para.Reset()
	w.line = line
}

func (w *htmlWalker) walk(n *html.Node) {
	w.lim.tick()
	switch n.Type {
	case html.CommentNode, html.DoctypeNode:
		return
	case html.TextNode:
		w.para.WriteString(n.Data)
		return
	case html.ElementNode:
		if skipped[n.DataAtom] {
			return
		}
		switch n.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			w.endPara(false)
			w.b.heading(int(n.Data[1]-'0'), textOf(n))
			return
		case atom.Br:
			w.para.WriteString("\n")
			if w.pre == 0 {
				w.endPara(w.line)
			}
			return
		case atom.Li:
			w.endPara(true)
			w.para.WriteString("- ")
			w.children(n)
			w.endPara(true)
			return
		case atom.Tr:
			w.endPara(true)
			first := true
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type != html.ElementNode || (c.DataAtom != atom.Td && c.DataAtom != atom.Th) {
					continue
				}
				if !first {
					w.para.WriteString(" | ")
				}
				first = false
				w.para.WriteString(strings.Join(strings.Fields(textOf(c)), " "))
			}
			w.endPara(true)
			return
		case atom.Dt, atom.Dd:
			w.endPara(true)
			w.children(n)
			w.endPara(true)
			return
		case atom.Img:
			for _, a := range n.Attr {
				if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
					w.para.WriteString(" " + a.Val + " ")
				}
			}
			return
		}
		if blocks[n.DataAtom] {
			w.endPara(false)
			if n.DataAtom == atom.Pre {
				w.pre++
			}
			w.children(n)
			if n.DataAtom == atom.Pre {
				w.pre--
			}
			w.endPara(false)
			return
		}
	}
	w.children(n)
}

func (w *htmlWalker) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// textOf returns the text of an element, without its skipped elements
// and comments.
func textOf(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && skipped[n.DataAtom]:
		case n.Type == html.ElementNode && n.DataAtom == atom.Br:
			b.WriteString(" ")
		default:
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				rec(c)
			}
		}
	}
	rec(n)
	return b.String()
}
