use pi_runtime::__private::Value;
use pi_runtime::tool::{Approval, ApprovalPolicy};
use pi_runtime::{Args, ToolDefinition, tool, tool_args};

/// Format the disk.
#[tool(approval = "always")]
async fn format_disk() -> String {
    "formatted".into()
}

/// Delete a file.
#[tool(approval = outside_tmp)]
async fn delete(path: String) -> String {
    path
}

/// A policy of the generated `…Params` struct.
fn outside_tmp(params: &DeleteParams) -> Approval {
    if params.path.starts_with("/tmp/") {
        Approval::NotNeeded
    } else {
        Approval::needed("outside /tmp")
    }
}

/// A payment.
#[tool_args]
pub struct Payment {
    /// Cents.
    pub amount: u64,
}

/// Move money.
#[tool(approval = policies::large)]
async fn transfer(Args(payment): Args<Payment>) -> String {
    payment.amount.to_string()
}

/// A policy of an `Args<T>` tool's `T`, by path.
mod policies {
    use pi_runtime::tool::Approval;

    pub fn large(payment: &super::Payment) -> Approval {
        if payment.amount > 100_000 {
            Approval::needed("a large transfer")
        } else {
            Approval::NotNeeded
        }
    }
}

fn needed(policy: ApprovalPolicy, args: &str) -> bool {
    let args: Value = serde_json::from_str(args).unwrap();
    policy.check("tool", &args).is_needed()
}

fn main() {
    assert!(needed(FormatDisk.settings().approval, "{}"));
    assert!(needed(Delete.settings().approval, r#"{"path": "/etc/passwd"}"#));
    assert!(!needed(Delete.settings().approval, r#"{"path": "/tmp/a"}"#));
    assert!(needed(Transfer.settings().approval, r#"{"amount": 200000}"#));
    assert!(!needed(Transfer.settings().approval, r#"{"amount": 5}"#));
}
