//! What a run starts from: the prompt.

use crate::message::{ContentBlock, Message, UserContent, UserMessage, now_ms};

/// What [`Agent::prompt`](super::Agent::prompt) accepts: text, a user message, any message, or several.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt(pub(crate) Vec<Message>);

impl Prompt {
    /// Text followed by images, as one user message.
    pub fn with_images(text: impl Into<String>, images: Vec<ContentBlock>) -> Self {
        let mut content = vec![ContentBlock::text(text)];
        content.extend(images);
        Prompt(vec![Message::from(UserMessage {
            content: UserContent::Blocks(content),
            timestamp: now_ms(),
        })])
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt(vec![UserMessage::text(text).into()])
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt(vec![UserMessage::text(text).into()])
    }
}

impl From<UserMessage> for Prompt {
    fn from(message: UserMessage) -> Self {
        Prompt(vec![message.into()])
    }
}

impl From<Message> for Prompt {
    fn from(message: Message) -> Self {
        Prompt(vec![message])
    }
}

impl From<Vec<Message>> for Prompt {
    fn from(messages: Vec<Message>) -> Self {
        Prompt(messages)
    }
}
