// Package shim holds the gRPC halves of the plugin protocol: the servers
// that wrap a harness implementation inside a plugin process, the clients
// that the host turns back into harness implementations, the callback
// services the host serves over go-plugin's broker (Model, ChannelHost),
// and the conversions between harness types and protocol messages,
// errors included.
//
// harness/plugin (the SDK) and harness/plugin/host are its only users;
// neither plugin authors nor embedders see it.
package shim
