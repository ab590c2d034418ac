"""What each component kind is called, in each output language (one table for every renderer)."""

KINDS = {
    "en": {
        "embeddings": "embeddings",
        "attention": "attention",
        "recurrent": "recurrent (SSM, linear attn.)",
        "feed_forward": "feed-forward",
        "experts": "experts",
        "router": "router",
        "norms": "norms",
        "output_head": "output head",
        "pooler": "pooler",
        "other": "other",
    },
    "zh": {
        "embeddings": "嵌入层",
        "attention": "注意力层",
        "recurrent": "循环层（状态空间、线性注意力）",
        "feed_forward": "前馈层",
        "experts": "专家层",
        "router": "路由器",
        "norms": "归一化层",
        "output_head": "输出层",
        "pooler": "池化层",
        "other": "其他",
    },
}

TOWERS = {
    "en": {
        "vision_encoder": "vision encoder",
        "audio_encoder": "audio encoder",
        "text_encoder": "text encoder",
        "projector": "projector",
        "language_model": "language model",
        "other": "other",
    },
    "zh": {
        "vision_encoder": "视觉编码器",
        "audio_encoder": "音频编码器",
        "text_encoder": "文本编码器",
        "projector": "投影层（多模态适配器）",
        "language_model": "语言模型",
        "other": "其他",
    },
}
