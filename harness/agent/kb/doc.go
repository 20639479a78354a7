// Package kb keeps the knowledge bases of Gauntlet's agents: plain files
// on disk, one directory per agent, Dir/<agent_id>/. A [Store] lists,
// reads, writes and deletes them; harness/agent/retrieval reads them back
// ([Store.Version], [Store.Documents]) to give a model what is relevant.
//
// Files are UTF-8 text of at most [MaxFileBytes] with plain names
// ([ValidName]: no "/", "\", "..", leading dot or control character, at
// most [MaxNameBytes] bytes). Every access goes through an os.Root, so
// that no name, and no symbolic link, reaches outside the agent's
// directory. A write streams its content to a temporary file in that
// directory, checking it on the way ([ErrTooLarge], [ErrUnsupported] as
// soon as seen, the rest unread), and renames it into place: readers see
// the old content or the new, never a part. [RemoveStaleTemp] removes the
// temporary files of writes a crash interrupted.
//
// # Lifecycle
//
//	store := kb.New(kb.Options{Dir: filepath.Join(dataDir, "kb"), Check: agentExists})
//	kb.RemoveStaleTemp(filepath.Join(dataDir, "kb")) // at start-up, before writes
//	store.Write(ctx, "helper", "faq.md", body, true)
//	store.List(ctx, "helper")
//
// The package knows nothing of agents beyond their ids: Options.Check is
// how the agent service (harness/agent, which makes and owns the Store)
// refuses an unknown agent. It is a package of its own so that the file
// rules and their tests stand apart from chat and channels, and so that
// retrieval can depend on it without depending on the agent service.
package kb
