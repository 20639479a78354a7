// Package nodeplugin holds the test of the Node.js evaluator plugin
// example (plugin.js, keyword.js, goplugin.js): it loads the plugin
// through the real plugin host from a plugins directory, runs the
// evaluator conformance kit against it, and checks that the plugin exits
// when its host is killed. It needs node and the example's node_modules
// (npm ci in this directory); without them the test is skipped, unless CI
// is set.
package nodeplugin
