//! The faux model: replays scripted assistant messages, streaming text and tool-call
//! arguments in small deltas, like pi's faux provider.
