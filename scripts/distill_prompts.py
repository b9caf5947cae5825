"""Chat prompts for distilling the embedded students: templated training prompts and a separate,
hand-written held-out set (different wording and topics) used only for measuring agreement."""

import random

TOPICS = """
photosynthesis|black holes|the water cycle|volcanoes|earthquakes|the immune system|vaccines|DNA|
evolution|gravity|magnetism|electricity|the speed of light|climate change|renewable energy|
solar panels|wind turbines|nuclear power|recycling|the ocean tides|coral reefs|rainforests|deserts|
honeybees|octopuses|dolphins|elephants|penguins|dinosaurs|the Moon|Mars|Jupiter|the Sun|comets|
the International Space Station|the Roman Empire|ancient Egypt|the pyramids|the printing press|
the Industrial Revolution|the French Revolution|the Renaissance|the Silk Road|the Great Wall of China|
democracy|taxes|inflation|the stock market|budgeting|saving money|credit cards|supply and demand|
coffee|tea|chocolate|bread baking|pizza|healthy breakfast|vegetarian cooking|spices|fermentation|
sleep|exercise|running|yoga|meditation|stress|friendship|time management|public speaking|
learning a new language|reading books|writing an essay|job interviews|teamwork|leadership|
the internet|email|passwords|computer viruses|artificial intelligence|machine learning|robots|
smartphones|video games|social media|programming|Python lists|recursion|databases|open source software|
music|the piano|jazz|painting|photography|poetry|theater|movies|libraries|museums|
soccer|chess|the Olympic Games|mountains|rivers|lakes|islands|the Arctic|weather forecasts|rainbows|
cats|dogs|gardening|houseplants|trees|mushrooms|bicycles|trains|airplanes|electric cars|bridges|
cities|farming|clean water|plastic pollution|the human brain|the heart|bones|teeth|memory|happiness
"""

TEMPLATES = [
    "What is {t}?",
    "Explain {t} in simple terms.",
    "Give me three interesting facts about {t}.",
    "Write a short poem about {t}.",
    "Why is {t} important?",
    "Write a short story that involves {t}.",
    "What are some common misconceptions about {t}?",
    "Summarize what you know about {t} in a few sentences.",
    "How would you explain {t} to a ten-year-old?",
    "What are the pros and cons of {t}?",
    "Write a haiku about {t}.",
    "Can you give me some tips related to {t}?",
    "Describe {t} in one paragraph.",
    "What questions do people often ask about {t}?",
    "Tell me something surprising about {t}.",
    "Write a friendly email to a colleague about {t}.",
    "List five words associated with {t} and explain each one.",
    "How has {t} changed over time?",
    "What would the world be like without {t}?",
    "Compare {t} and {u}.",
    "What do {t} and {u} have in common?",
]

ARITHMETIC = ["What is {a} plus {b}?", "What is {a} times {b}?", "If I have {a} apples and eat {b}, "
              "how many are left?", "Is {a} an even number?", "What is {a} minus {b}?"]

HELD_OUT = [
    "What is the capital of France?",
    "How do airplanes stay in the air?",
    "Write a limerick about a sleepy cat.",
    "Give me a recipe for a simple tomato soup.",
    "What causes the seasons on Earth?",
    "Suggest three names for a small bakery.",
    "How can I improve my handwriting?",
    "Explain what a prime number is.",
    "Why do leaves change color in autumn?",
    "What should I pack for a weekend camping trip?",
    "Describe the taste of a lemon to someone who has never had one.",
    "What is the difference between weather and climate?",
    "Write two sentences encouraging a friend before an exam.",
    "How does a refrigerator keep food cold?",
    "Who was Ada Lovelace?",
    "What are good habits for staying focused while studying?",
    "Translate 'good morning, how are you?' into Spanish.",
    "Why is the sky blue?",
    "Give me an idea for a birthday party for a seven-year-old.",
    "What is a noun? Give examples.",
    "How do I make my tomato plants grow better?",
    "Explain why we need to drink water.",
    "Write the opening line of a mystery novel.",
    "What are the planets in our solar system?",
]


def topics() -> list[str]:
    return [t.strip() for t in TOPICS.replace("\n", "").split("|") if t.strip()]


def training_prompts(count: int, seed: int) -> list[str]:
    """`count` distinct prompts: topics x templates, plus a tenth of small arithmetic questions."""
    rng = random.Random(seed)
    subjects, prompts = topics(), set()
    while len(prompts) < count:
        if rng.random() < 0.1:
            prompt = rng.choice(ARITHMETIC).format(a=rng.randint(2, 99), b=rng.randint(2, 30))
        else:
            first, second = rng.sample(subjects, 2)
            prompt = rng.choice(TEMPLATES).format(t=first, u=second)
        if prompt not in HELD_OUT:
            prompts.add(prompt)
    return sorted(prompts)
