// Package options holds the karp controller's settings: every flag, its
// environment variable and its default, named as upstream Karpenter names
// them so existing deployments' settings carry over.
//
// Parse reads a FlagSet (command line first, then the environment, then
// the default) into an Options value and validates it. Options are passed
// explicitly to whoever needs them; nothing reads them from a context.
package options
