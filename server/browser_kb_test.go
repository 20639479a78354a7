package server_test

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// execSQL runs a statement on the test server's database, beside the
// server: to store a record as another configuration would have.
func (e *testEnv) execSQL(query string, args ...any) {
	e.t.Helper()
	u := databaseURL(e.t, e.dataDir)
	driver, dsn := "pgx", u
	if path, ok := strings.CutPrefix(u, "sqlite://"); ok {
		driver, dsn = sqliteshim.ShimName, "file:"+path+"?_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
}

// kbWithMarkup is a knowledge base whose text holds markup: the page must
// show it as text, never parse it.
func kbWithMarkup(t *testing.T, e *testEnv, agentID string) {
	t.Helper()
	must(t, e.post("/api/agents/"+agentID+"/kb", map[string]any{"filename": "pets.md",
		"content": "# Pets\n\nThe office cat is called Biscuit. <img src=x onerror=\"document.title='owned'\">"}), http.StatusCreated)
	must(t, e.post("/api/agents/"+agentID+"/kb", map[string]any{"filename": "hours.md",
		"content": "# Opening hours\n\nThe shop opens at nine."}), http.StatusCreated)
}

// noMarkupRan checks that no text from the server became an element.
func noMarkupRan(t *testing.T, b *browser) {
	t.Helper()
	if n := evalJS[int](b, `document.querySelectorAll('main img').length`); n != 0 {
		t.Errorf("%d img elements made from server text", n)
	}
	if title := evalJS[string](b, `document.title`); title == "owned" {
		t.Error("knowledge-base text ran as HTML")
	}
}

// TestBrowserChatSources chats with an agent that has a knowledge base:
// the reply shows the chunks its model was given (file, part, score) and
// how they were found; the conversations view shows the same sources on
// the stored reply, after a reload of the page too, and none on the
// user's message.
func TestBrowserChatSources(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "Answer from the knowledge base.")
	kbWithMarkup(t, e, "bot")

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	b.typeInto("#chat-user", "alice")
	b.typeInto("#chat-message", "Biscuit cat?")
	b.click(`#chat-form button[type="submit"]`)
	b.wait("the reply's sources", `document.querySelector('#chat-log .msg-agent .sources') !== null`)

	const chatSources = `[...document.querySelectorAll('#chat-log .msg-agent .sources li')]`
	got := evalJS[[]string](b, chatSources+`.map(li => li.dataset.file + '#' + li.dataset.chunk + ' ' + li.textContent)`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "pets.md#0 pets.md · part 1 · score ") || got[1] != "hours.md#0 hours.md · part 1 · not matched" {
		t.Errorf("chat sources %q; want pets.md with its score, then hours.md (given whole, not matched)", got)
	}
	if mode := b.text(`#chat-log .msg-agent .sources-mode`); mode != "bm25" {
		t.Errorf("mode %q, want bm25", mode)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#chat-log .sources-fallback').length`); n != 0 {
		t.Errorf("%d fallback notes without a fallback", n)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#chat-log .msg-user .sources').length`); n != 0 {
		t.Errorf("the user's message shows sources")
	}

	const convSources = `[...document.querySelectorAll('#conv-transcript .msg[data-role="assistant"] .sources li')].map(li => li.dataset.file + ' ' + li.textContent)`
	checkTranscript := func(t *testing.T) {
		t.Helper()
		b.wait("alice's conversation", `document.querySelector('#conversations tr[data-user="alice"]') !== null`)
		b.click(`#conversations tr[data-user="alice"] button`)
		b.wait("the transcript's sources", `document.querySelector('#conv-transcript .msg[data-role="assistant"] .sources') !== null`)
		stored := evalJS[[]string](b, convSources)
		if len(stored) != 2 || !strings.HasPrefix(stored[0], "pets.md pets.md · part 1 · score ") || !strings.HasPrefix(stored[1], "hours.md ") {
			t.Errorf("stored reply's sources %q", stored)
		}
		if chat := evalJS[[]string](b, chatSources+`.map(li => li.dataset.file + ' ' + li.textContent)`); len(chat) > 0 && strings.Join(chat, "|") != strings.Join(stored, "|") {
			t.Errorf("the transcript shows %q, the chat %q", stored, chat)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#conv-transcript .msg[data-role="user"] .sources').length`); n != 0 {
			t.Error("the user's message shows sources in the transcript")
		}
		if mode := b.text(`#conv-transcript .msg[data-role="assistant"] .sources-mode`); mode != "bm25" {
			t.Errorf("transcript mode %q", mode)
		}
	}

	t.Run("the conversations view shows the stored sources", func(t *testing.T) {
		b.click(`#conv-refresh`)
		checkTranscript(t)
	})

	t.Run("a reply whose retrieval fell back to BM25 says why", func(t *testing.T) {
		// As hybrid retrieval stores a reply when the embedding endpoint
		// fails: BM25 sources, and the reason.
		e.chat("bot", "fb", "Biscuit cat?")
		e.execSQL(`UPDATE chat_messages SET retrieval = '{"mode":"bm25","fallback":"embedding endpoint: <b>503</b>"}' WHERE user_id = 'fb' AND role = 'assistant'`)
		b.click(`#conv-refresh`)
		b.wait("fb's conversation", `document.querySelector('#conversations tr[data-user="fb"]') !== null`)
		b.click(`#conversations tr[data-user="fb"] button`)
		b.wait("the fallback note", `document.querySelector('#conv-transcript .sources-fallback') !== null`)
		if got := b.text(`#conv-transcript .sources-fallback`); got != "⚠ Retrieval fell back to BM25: embedding endpoint: <b>503</b>" {
			t.Errorf("fallback note %q", got)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#conv-transcript .sources-fallback b').length`); n != 0 {
			t.Error("the reason was parsed as HTML")
		}
	})

	t.Run("after a reload", func(t *testing.T) {
		b.do("reload", chromedp.Reload())
		b.wait("the agent page", `document.getElementById('conversations') !== null`)
		checkTranscript(t)
		noMarkupRan(t, b)
	})
}

// TestBrowserKBSearch searches an agent's knowledge base from its page:
// the results show file, part, score, both ranks (— for the vector rank
// without embeddings) and the chunk's text as text; a bad k is refused by
// the server and shown on its field.
func TestBrowserKBSearch(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "Answer from the knowledge base.")
	kbWithMarkup(t, e, "bot")

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	b.wait("the search panel", `document.getElementById('kb-search-form') !== null`)

	t.Run("results with both ranks", func(t *testing.T) {
		b.typeInto("#kb-search-q", "Biscuit cat opens")
		b.typeInto("#kb-search-k", "3")
		b.click(`#kb-search-form button[type="submit"]`)
		const rows = `[...document.querySelectorAll('#kb-search-results tbody tr')]`
		b.wait("the results", rows+`.length === 2`)
		got := evalJS[[][]string](b, rows+`.map(r => [...r.cells].slice(0, 6).map(c => c.textContent))`)
		if got[0][1] != "pets.md" || got[0][2] != "1" || got[0][4] != "1" || got[0][5] != "—" ||
			got[1][1] != "hours.md" || got[1][4] != "2" || got[1][5] != "—" {
			t.Errorf("rows %q; want pets.md then hours.md, BM25 ranks 1 and 2, no vector rank", got)
		}
		if got[0][3] == "" || got[0][3] == "0" {
			t.Errorf("score %q", got[0][3])
		}
		if text := b.text(`#kb-search-results tr[data-file="pets.md"] .kb-search-text`); !strings.Contains(text, `<img src=x onerror=`) {
			t.Errorf("the chunk's text shows %q", text)
		}
		if mode := b.text(`#kb-search-results .kb-search-mode`); !strings.Contains(mode, "BM25") {
			t.Errorf("mode line %q", mode)
		}
		noMarkupRan(t, b)
	})

	t.Run("a query that matches nothing says so", func(t *testing.T) {
		b.typeInto("#kb-search-q", "zebra")
		b.typeInto("#kb-search-k", "5")
		b.click(`#kb-search-form button[type="submit"]`)
		b.wait("no result", `document.querySelector('#kb-search-results .kb-search-mode')?.textContent.startsWith('0 chunks') === true`)
	})

	t.Run("a bad k is refused on its field", func(t *testing.T) {
		b.typeInto("#kb-search-q", "Biscuit")
		b.typeInto("#kb-search-k", "51")
		b.click(`#kb-search-form button[type="submit"]`)
		b.wait("the error on k", `document.querySelector('#kb-search-k[aria-invalid="true"]') !== null`)
		b.expectProblem("422")
		if got := b.text(`#kb-search-form [data-field="query.k"] .field-error`); got == "" {
			t.Error("no message on k")
		}
	})

	t.Run("an empty question is not sent", func(t *testing.T) {
		b.typeInto("#kb-search-k", "5")
		b.do("empty the question", chromedp.Evaluate[chromedp.Void](`document.getElementById('kb-search-q').value = ''`))
		b.click(`#kb-search-form button[type="submit"]`)
		b.wait("the error on the question", `document.querySelector('#kb-search-q[aria-invalid="true"]') !== null`)
	})
}

// TestBrowserTelegramShowSources sets a Telegram channel's show_sources
// with the channel form, and reads it back there.
func TestBrowserTelegramShowSources(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "")
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	b.click(`section[aria-labelledby="channels-heading"] .card-head button`)
	b.wait("the channel form", `document.getElementById('channel-form') !== null`)
	b.typeInto(`#channel-form [name="config.bot_token"]`, "123:abc")
	b.click(`#channel-form [name="config.show_sources"]`)
	b.click(`#channel-form button[type="submit"]`)
	b.wait("the channel listed", `document.querySelector('tr[data-channel]') !== null`)
	var list struct {
		Channels []struct {
			Config map[string]any `json:"config"`
		} `json:"channels"`
	}
	must(t, e.get("/api/agents/bot/channels"), http.StatusOK).decode(t, &list)
	if len(list.Channels) != 1 || list.Channels[0].Config["show_sources"] != true {
		t.Fatalf("channels %+v, want one with show_sources true", list.Channels)
	}
	b.click(`tr[data-channel] .row-actions button:nth-child(2)`)
	b.wait("the edit form", `document.querySelector('#channel-form [name="config.show_sources"]')?.checked === true`)
}
