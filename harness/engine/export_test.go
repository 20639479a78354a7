package engine

// WaitRuns waits until the goroutines of every run have returned, the
// runs a Reset left behind included.
func WaitRuns(e *Engine) { e.running.Wait() }
