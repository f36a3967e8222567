// The prompt of the end-to-end benchmarks (bench:e2e, bench:long).
// 106 tokens with the Gemma 3 tokenizer (BOS included). A base-style text that ends mid-heading,
// so greedy decoding runs the full 64 tokens without reaching EOS.
export const PROMPT =
  "The history of the spice trade is a story of ships, storms and ambition. For more than two " +
  "thousand years, merchants carried pepper, cinnamon, cloves and nutmeg from the islands of " +
  "Southeast Asia and the coasts of India to the markets of Arabia, Egypt and Europe. Port cities " +
  "such as Malacca, Calicut and Alexandria grew rich on this traffic, and empires rose and fell as " +
  "they fought to control it. In this long article, we will walk through the story, century by " +
  "century. Chapter 1: The first sailors";
