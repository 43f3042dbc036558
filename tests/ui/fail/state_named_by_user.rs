use pi_runtime::{tool, tool_args};

/// A generic type of the user's named `State`.
#[tool_args]
struct State<T> {
    open: T,
}

/// `State<bool>` is spelled like the tool's state: import it as `DoorState` to make it an argument.
#[tool]
async fn door(state: State<bool>) -> String {
    state.open.to_string()
}

fn main() {}
