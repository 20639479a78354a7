// Package pluginpb is the generated Go code of the Gauntlet plugin
// protocol, version 1 (package gauntlet.plugin.v1): the .proto files beside
// it are the contract a plugin in any language implements. Plugin authors
// writing Go use the SDK in harness/plugin instead of this package.
//
// Regenerate with `make generate`, which installs protoc and the pinned
// code generators first. The files are compiled from the module root so
// that their registered names (harness/plugin/proto/*.proto) are unique.
package pluginpb

//go:generate protoc -I ../../.. --go_out=../../.. --go_opt=paths=source_relative --go-grpc_out=../../.. --go-grpc_opt=paths=source_relative harness/plugin/proto/common.proto harness/plugin/proto/plugin.proto harness/plugin/proto/evaluator.proto harness/plugin/proto/host.proto harness/plugin/proto/channel.proto harness/plugin/proto/tool.proto
