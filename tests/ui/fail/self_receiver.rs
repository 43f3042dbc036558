use pi_runtime::tool;

struct Shell;

impl Shell {
    /// Takes self.
    #[tool]
    async fn bash(&self, command: String) -> String {
        command
    }
}

fn main() {}
